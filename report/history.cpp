#include "report/history.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/quote.h"
#include "report/format.h"

namespace trainscope::report {

namespace {

// One case's repetitions at one revision, pooled over that revision's suites.
struct RevisionSamples {
  std::string revision;
  int64_t first_suite_id = 0;
  std::vector<double> step_time_s;
  std::vector<double> tokens_per_s;
};

std::string revision_of(const SuiteData& s) {
  return s.suite.info.git_revision.empty() ? "unknown" : s.suite.info.git_revision;
}

void add_case_runs(const CaseData& c, RevisionSamples& into) {
  for (const RunData* run : c.usable_runs()) {
    into.step_time_s.push_back(run->summary->totals.step_time_median_s);
    into.tokens_per_s.push_back(run->summary->totals.tokens_per_s);
  }
}

CaseHistory case_history(const std::string& suite, const std::string& name,
                         const std::vector<RevisionSamples>& by_revision, double alpha) {
  CaseHistory h{suite, name, {}, {}, {}};
  std::vector<double> medians;
  for (const RevisionSamples& r : by_revision) {
    if (r.step_time_s.empty()) continue;
    HistoryPoint p;
    p.revision = r.revision;
    p.first_suite_id = r.first_suite_id;
    p.repetitions = static_cast<int>(r.step_time_s.size());
    p.step_time_s = bootstrap_median(r.step_time_s);
    p.tokens_per_s = bootstrap_median(r.tokens_per_s);
    medians.push_back(p.step_time_s.estimate);
    h.points.push_back(std::move(p));
  }
  for (const ChangePoint& cp : find_change_points(medians, alpha)) {
    h.changes.push_back({cp.index, h.points[cp.index].revision, cp});
  }
  if (medians.size() >= 2 && !(pettitt_min_p_value(medians.size()) < alpha)) {
    h.too_short = fmt::format(
        "{} / {}: {} revisions cannot show a change at p < {:g} (the smallest p of Pettitt's test "
        "over {} values is {:.2f}): no change is found or ruled out before {} revisions",
        suite, name, medians.size(), alpha, medians.size(), pettitt_min_p_value(medians.size()),
        pettitt_values_needed(alpha));
  }
  return h;
}

std::string interval_ms(const Interval& iv) {
  Interval ms = iv;
  ms.estimate *= 1e3;
  ms.low *= 1e3;
  ms.high *= 1e3;
  return format_interval(ms, 3, "");
}

std::string change_sentence(const CaseHistory& h, const HistoryChange& c) {
  return fmt::format(
      "{} / {}: step time changed at revision {} (first after the change; median {} -> {} ms, "
      "Pettitt p = {:.3f})",
      h.suite, h.case_name, c.first_revision, format_number(c.test.median_before * 1e3, 3),
      format_number(c.test.median_after * 1e3, 3), c.test.p_value);
}

std::map<std::string, std::vector<const CaseHistory*>> by_suite(
    const std::vector<CaseHistory>& history) {
  std::map<std::string, std::vector<const CaseHistory*>> out;
  for (const CaseHistory& h : history) out[h.suite].push_back(&h);
  return out;
}

}  // namespace

size_t revision_count(const std::vector<SuiteData>& suites) {
  std::set<std::string> revisions;
  for (const SuiteData& s : suites) revisions.insert(revision_of(s));
  return revisions.size();
}

std::vector<CaseHistory> build_history(const std::vector<SuiteData>& suites, double alpha) {
  // suite name -> case name -> revisions in order of first measurement.
  std::map<std::string, std::map<std::string, std::vector<RevisionSamples>>> samples;
  std::vector<std::pair<std::string, std::string>> order;  // (suite, case) as first seen
  // Suite ids grow as suites are run: the revisions in the order measured.
  std::vector<const SuiteData*> by_id;
  for (const SuiteData& s : suites) by_id.push_back(&s);
  std::sort(by_id.begin(), by_id.end(),
            [](const SuiteData* a, const SuiteData* b) { return a->suite.id < b->suite.id; });
  for (const SuiteData* suite : by_id) {
    const SuiteData& s = *suite;
    const std::string revision = revision_of(s);
    for (const CaseData& c : s.cases) {
      auto& revisions = samples[s.suite.info.name][c.name];
      if (revisions.empty()) order.emplace_back(s.suite.info.name, c.name);
      auto it = std::find_if(revisions.begin(), revisions.end(),
                             [&](const RevisionSamples& r) { return r.revision == revision; });
      if (it == revisions.end()) {
        revisions.push_back({revision, s.suite.id, {}, {}});
        it = revisions.end() - 1;
      }
      add_case_runs(c, *it);
    }
  }
  std::vector<CaseHistory> out;
  for (const auto& [suite, name] : order) {
    out.push_back(case_history(suite, name, samples[suite][name], alpha));
  }
  return out;
}

std::string history_text(const std::vector<CaseHistory>& history) {
  std::string out;
  for (const auto& [suite, cases] : by_suite(history)) {
    out += fmt::format("suite {}: step time median ms [95% interval] per revision\n",
                       terminal_safe(suite));
    for (const CaseHistory* h : cases) {
      out += fmt::format("  {}\n", terminal_safe(h->case_name));
      for (size_t i = 0; i < h->points.size(); ++i) {
        const HistoryPoint& p = h->points[i];
        const bool change = std::any_of(h->changes.begin(), h->changes.end(),
                                        [&](const HistoryChange& c) { return c.index == i; });
        out += fmt::format("    {:<20} {:>3} reps  {}  tokens/s {}{}\n", terminal_safe(p.revision), p.repetitions,
                           interval_ms(p.step_time_s), format_interval(p.tokens_per_s, 1, ""),
                           change ? "  <- change" : "");
      }
    }
    for (const CaseHistory* h : cases) {
      for (const HistoryChange& c : h->changes) out += terminal_safe(change_sentence(*h, c), 1000) + "\n";
      if (!h->too_short.empty()) out += terminal_safe(h->too_short, 1000) + "\n";
    }
  }
  return out;
}

std::string history_markdown(const std::vector<CaseHistory>& history) {
  std::string out = "## History across revisions\n\n";
  for (const auto& [suite, cases] : by_suite(history)) {
    out += fmt::format("Suite {}: step time median, ms, with its 95% interval over the "
                       "repetitions of each revision.\n\n",
                       markdown_cell(suite));
    out += "| case | revision | reps | step ms | tokens/s | change |\n|:--|:--|--:|--:|--:|:--|\n";
    for (const CaseHistory* h : cases) {
      for (size_t i = 0; i < h->points.size(); ++i) {
        const HistoryPoint& p = h->points[i];
        const bool change = std::any_of(h->changes.begin(), h->changes.end(),
                                        [&](const HistoryChange& c) { return c.index == i; });
        out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", markdown_cell(h->case_name),
                           markdown_cell(p.revision), p.repetitions, interval_ms(p.step_time_s),
                           format_interval(p.tokens_per_s, 1, ""), change ? "**change**" : "");
      }
    }
    out += "\n";
    for (const CaseHistory* h : cases) {
      for (const HistoryChange& c : h->changes) out += "- " + markdown_cell(change_sentence(*h, c)) + "\n";
      if (!h->too_short.empty()) out += "- " + markdown_cell(h->too_short) + "\n";
    }
  }
  return out + "\n";
}

ChartSpec history_chart(const std::vector<const CaseHistory*>& cases) {
  ChartSpec chart;
  chart.id = "history-" + (cases.empty() ? std::string("none") : cases.front()->suite);
  chart.title = "Step time per revision (95% intervals; dashed: change points)";
  std::string plot, arrows, tics;
  size_t longest = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const CaseHistory& h = *cases[k];
    std::string data;
    for (size_t i = 0; i < h.points.size(); ++i) {
      const Interval& iv = h.points[i].step_time_s;
      const double lo = iv.has_interval() ? iv.low : iv.estimate;
      const double hi = iv.has_interval() ? iv.high : iv.estimate;
      data += fmt::format("{} {:.9g} {:.9g} {:.9g}\n", i, iv.estimate * 1e3, lo * 1e3, hi * 1e3);
    }
    if (h.points.size() > longest) {
      longest = h.points.size();
      tics.clear();
      for (size_t i = 0; i < h.points.size(); ++i) {
        tics += fmt::format("{}{} {}", i ? ", " : "", gnuplot_quote(h.points[i].revision.substr(0, 10)), i);
      }
    }
    const std::string file = fmt::format("history{}.dat", k);
    chart.data.push_back({file, data});
    plot += fmt::format("{}{} using 1:2:3:4 with yerrorlines lw 2 pt 7 title {}", k ? ", " : "",
                        gnuplot_quote(file), gnuplot_quote(h.case_name));
    for (const HistoryChange& c : h.changes) {
      arrows += fmt::format("set arrow from {0}-0.5, graph 0 to {0}-0.5, graph 1 nohead dt 2\n",
                            c.index);
    }
  }
  chart.script = arrows + "set xtics (" + tics + ") rotate by -30\nset xlabel 'git revision'\n" +
                 "set ylabel 'step time median, ms'\nset yrange [0:*]\nset offsets 0.3, 0.3, 0, 0\nplot " +
                 plot + "\n";
  return chart;
}

std::string history_html(const std::vector<CaseHistory>& history,
                         const std::optional<std::string>& gnuplot) {
  std::string out = "<section class=\"history\" id=\"history\">\n<h2>History across revisions</h2>\n";
  for (const auto& [suite, cases] : by_suite(history)) {
    out += fmt::format("<h3>Suite {}</h3>\n<table>\n<tr><th class=\"name\">case</th><th>revision"
                       "</th><th>reps</th><th>step ms [95%]</th><th>tokens/s [95%]</th><th>change"
                       "</th></tr>\n",
                       html_escape(suite));
    for (const CaseHistory* h : cases) {
      for (size_t i = 0; i < h->points.size(); ++i) {
        const HistoryPoint& p = h->points[i];
        const bool change = std::any_of(h->changes.begin(), h->changes.end(),
                                        [&](const HistoryChange& c) { return c.index == i; });
        out += fmt::format(
            "<tr><td class=\"name\">{}</td><td class=\"name\">{}</td><td>{}</td><td>{}</td><td>{}"
            "</td><td>{}</td></tr>\n",
            html_escape(h->case_name), html_escape(p.revision), p.repetitions,
            html_escape(interval_ms(p.step_time_s)),
            html_escape(format_interval(p.tokens_per_s, 1, "")), change ? "<b>change</b>" : "");
      }
    }
    out += "</table>\n";
    for (const CaseHistory* h : cases) {
      for (const HistoryChange& c : h->changes) {
        out += "<p class=\"note\">" + html_escape(change_sentence(*h, c)) + "</p>\n";
      }
      if (!h->too_short.empty()) out += "<p class=\"note\">" + html_escape(h->too_short) + "</p>\n";
    }
    if (!gnuplot) continue;
    const ChartSpec chart = history_chart(cases);
    try {
      out += fmt::format("<figure id=\"{}\"><figcaption>{}</figcaption>\n{}\n</figure>\n",
                         chart.id, html_escape(chart.title), render_svg(*gnuplot, chart));
    } catch (const Error& e) {
      out += "<p class=\"error\">" + html_escape(e.what()) + "</p>\n";
    }
  }
  return out + "</section>\n";
}

}  // namespace trainscope::report
