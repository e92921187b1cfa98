// trainscope report: a suite's results as one self-contained HTML page with
// gnuplot charts, or a Markdown summary for CI logs and pull requests.
//
//   trainscope report --db results.db --out report.html
//   trainscope report --db results.db --suite 3 --format md
//
// The logic lives in report/report.h; this file only maps flags.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/validators.h"
#include "base/check.h"
#include "base/atomic_file.h"
#include "profiler/supervise.h"
#include "report/build_comparisons.h"
#include "report/gnuplot.h"
#include "report/history_page.h"
#include "report/report.h"
#include "analysis/suite_data.h"
#include "results/results_db.h"

namespace trainscope::cli {

void add_report_command(CLI::App& app) {
  struct Flags {
    std::string db;
    std::string suite = "latest";
    std::string out = "report.html";
    std::string format = "html";
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "report",
      "Report a suite from the results database. Per suite: every case against the baseline\n"
      "case (mode naive, else the case named naive, else the first case): tokens/s, speedup,\n"
      "scaling efficiency (speedup / growth in ranks), step time median/p95, comm share of\n"
      "the step, status with the reason of failed or skipped cases; memory per rank and\n"
      "summed over ranks; for scaling suites the serial fraction of Amdahl's law fitted by\n"
      "least squares; for suites whose cases train differently (full vs LoRA), each case's\n"
      "comm bytes per step, trainable parameters and memory by category, and the time the\n"
      "second rank saves for each. HTML adds charts drawn by gnuplot (phases, memory by\n"
      "category, memory over time, loss curves, reduction time vs bucket size, bandwidth vs\n"
      "links, busbw vs message size, Amdahl fit) as inline SVG; the page needs no network.\n"
      "Without gnuplot (set TRAINSCOPE_GNUPLOT to choose the program) the page has tables\n"
      "only. When the database holds suites of more than one git revision, both formats end\n"
      "with their history (see `trainscope history`). Comparisons of two builds (`trainscope\n"
      "compare`, `trainscope work`) come first, one table each.");
  sub->add_option("--db", flags->db, "Results database to read")->required()->check(kDbFile);
  sub->add_option("--suite", flags->suite, "Suite to report: latest, all, or a suite id")
      ->capture_default_str();
  sub->add_option("--out", flags->out,
                  "HTML file to write (atomically: a reader never sees half a file); ignored "
                  "with --format md")
      ->capture_default_str();
  sub->add_option("--format", flags->format,
                  "html (a file, see --out) or md (a Markdown summary on stdout)")
      ->capture_default_str()
      ->check(CLI::IsMember({"html", "md"}));
  sub->callback([flags] {
    auto db = results::ResultsDb::open_for_reading(flags->db);
    const std::vector<report::Table> builds = report::build_comparison_tables(db);
    // A work lane's database holds comparisons and no suite: those alone.
    const bool comparisons_only = !builds.empty() && db.list_suites().empty();
    // Results across commits: every suite of the database (each loaded once),
    // the reported ones taken from them.
    std::vector<analysis::SuiteData> all;
    if (!comparisons_only) {
      for (int64_t id : analysis::resolve_suites(db, "all"))
        all.push_back(analysis::load_suite(db, id));
    }
    std::vector<analysis::SuiteData> suites;
    for (int64_t id :
         comparisons_only ? std::vector<int64_t>{} : analysis::resolve_suites(db, flags->suite)) {
      const auto it = std::find_if(all.begin(), all.end(),
                                   [id](const analysis::SuiteData& s) { return s.suite.id == id; });
      suites.push_back(it != all.end() ? *it : analysis::load_suite(db, id));
    }
    const bool history = check::revision_count(all) > 1;
    if (flags->format == "md") {
      for (const auto& t : builds) std::fputs(report::to_markdown(t).c_str(), stdout);
      std::fputs(report::render_markdown(suites).c_str(), stdout);
      if (history) std::fputs(check::history_markdown(check::build_history(all)).c_str(), stdout);
      return;
    }
    // SIGINT/SIGTERM stop gnuplot and remove its files, then the report.
    const SignalGuard signals(SignalPolicy::kRecordInterrupt);
    auto html =
        report::render_html(suites, {.gnuplot = report::find_gnuplot(), .signals = &signals});
    if (signals.interrupted()) {
      throw Error(fmt::format("interrupted by SIG{}: {} not written",
                              sigabbrev_np(signals.interrupt_signal()), flags->out),
                  128 + signals.interrupt_signal());
    }
    for (const auto& note : html.notes)
      std::fprintf(stderr, "trainscope report: %s\n", note.c_str());
    if (!builds.empty()) {
      std::string section =
          "<section class=\"suite\" id=\"builds\">\n<h2>Comparisons of two builds</h2>\n";
      for (const auto& t : builds) section += report::to_html(t);
      const size_t after_title = html.html.find("</p>\n", html.html.find("<h1>")) + 5;
      html.html.insert(after_title, section + "</section>\n");
    }
    if (history) {
      const std::string section =
          report::history_html(check::build_history(all), report::find_gnuplot());
      html.html.insert(html.html.rfind("</body>"), section);
    }
    write_file_atomically(flags->out, html.html);
    std::printf("wrote %s: %zu suite(s), %d chart(s)\n", flags->out.c_str(), suites.size(),
                html.charts);
  });
}

}  // namespace trainscope::cli
