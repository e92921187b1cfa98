#include "report/history_page.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/check.h"
#include "base/format.h"

namespace trainscope::report {

using check::CaseHistory;
using check::HistoryChange;
using check::HistoryPoint;

ChartSpec history_chart(const std::vector<const check::CaseHistory*>& cases) {
  ChartSpec chart;
  chart.id = "history-" + (cases.empty() ? std::string("none") : cases.front()->suite);
  chart.title = "Step time per revision (95% intervals; dashed: change points)";
  std::string plot, arrows, tics;
  size_t longest = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const check::CaseHistory& h = *cases[k];
    std::string data;
    for (size_t i = 0; i < h.points.size(); ++i) {
      const analysis::Interval& iv = h.points[i].step_time_s;
      const double lo = iv.has_interval() ? iv.low : iv.estimate;
      const double hi = iv.has_interval() ? iv.high : iv.estimate;
      data += fmt::format("{} {:.9g} {:.9g} {:.9g}\n", i, iv.estimate * 1e3, lo * 1e3, hi * 1e3);
    }
    if (h.points.size() > longest) {
      longest = h.points.size();
      tics.clear();
      for (size_t i = 0; i < h.points.size(); ++i) {
        tics += fmt::format("{}{} {}", i ? ", " : "",
                            gnuplot_quote(h.points[i].revision.substr(0, 10)), i);
      }
    }
    const std::string file = fmt::format("history{}.dat", k);
    chart.data.push_back({file, data});
    plot += fmt::format("{}{} using 1:2:3:4 with yerrorlines lw 2 pt 7 title {}", k ? ", " : "",
                        gnuplot_quote(file), gnuplot_quote(h.case_name));
    for (const check::HistoryChange& c : h.changes) {
      arrows +=
          fmt::format("set arrow from {0}-0.5, graph 0 to {0}-0.5, graph 1 nohead dt 2\n", c.index);
    }
  }
  chart.script =
      arrows + "set xtics (" + tics + ") rotate by -30\nset xlabel 'git revision'\n" +
      "set ylabel 'step time median, ms'\nset yrange [0:*]\nset offsets 0.3, 0.3, 0, 0\nplot " +
      plot + "\n";
  return chart;
}

std::string history_html(const std::vector<check::CaseHistory>& history,
                         const std::optional<std::string>& gnuplot) {
  std::string out =
      "<section class=\"history\" id=\"history\">\n<h2>History across revisions</h2>\n";
  for (const auto& [suite, cases] : check::by_suite(history)) {
    out += fmt::format(
        "<h3>Suite {}</h3>\n<table>\n<tr><th class=\"name\">case</th><th>revision"
        "</th><th>reps</th><th>step ms [95%]</th><th>tokens/s [95%]</th><th>change"
        "</th></tr>\n",
        html_escape(suite));
    for (const check::CaseHistory* h : cases) {
      for (size_t i = 0; i < h->points.size(); ++i) {
        const check::HistoryPoint& p = h->points[i];
        const bool change =
            std::any_of(h->changes.begin(), h->changes.end(),
                        [&](const check::HistoryChange& c) { return c.index == i; });
        out += fmt::format(
            "<tr><td class=\"name\">{}</td><td class=\"name\">{}</td><td>{}</td><td>{}</td><td>{}"
            "</td><td>{}</td></tr>\n",
            html_escape(h->case_name), html_escape(p.revision), p.repetitions,
            html_escape(check::interval_ms(p.step_time_s)),
            html_escape(analysis::format_interval(p.tokens_per_s, 1, "")),
            change ? "<b>change</b>" : "");
      }
    }
    out += "</table>\n";
    for (const check::CaseHistory* h : cases) {
      for (const check::HistoryChange& c : h->changes) {
        out += "<p class=\"note\">" + html_escape(check::change_sentence(*h, c)) + "</p>\n";
      }
      if (!h->too_short.empty()) out += "<p class=\"note\">" + html_escape(h->too_short) + "</p>\n";
    }
    if (!gnuplot) continue;
    const ChartSpec chart = history_chart(cases);
    try {
      out += fmt::format("<figure id=\"{}\"><figcaption>{}</figcaption>\n{}\n</figure>\n", chart.id,
                         html_escape(chart.title), render_svg(*gnuplot, chart));
    } catch (const Error& e) {
      out += "<p class=\"error\">" + html_escape(e.what()) + "</p>\n";
    }
  }
  return out + "</section>\n";
}

}  // namespace trainscope::report
