// trainscope history: each case's step time and tokens/s per git revision,
// with intervals and change points, from every suite of a results database.
//
//   trainscope history --db results.db
//   trainscope history --db results.db --suite smoke --chart smoke-history.svg
//
// The logic lives in check/history.h; this file only maps flags.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/check.h"
#include "cli/commands.h"
#include "cli/validators.h"
#include "report/gnuplot.h"
#include "report/history_page.h"
#include "analysis/suite_data.h"
#include "results/results_db.h"

namespace trainscope::cli {

void add_history_command(CLI::App& app) {
  struct Flags {
    std::string db;
    std::string suite;
    std::string format = "text";
    std::string chart;
    double alpha = 0.05;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "history",
      "Each case's metric per git revision across every suite of the database (in the order\n"
      "the revisions were first measured): the step time median over the revision's\n"
      "repetitions with its 95% bootstrap interval, tokens/s likewise, and the change points\n"
      "of the step time series (Pettitt's rank test, binary segmentation, p < --alpha), each\n"
      "naming the first revision after the change. --chart draws the trend with error bars\n"
      "and the change points (gnuplot, SVG).");
  sub->add_option("--db", f->db, "Results database to read")->required()->check(kDbFile);
  sub->add_option("--suite", f->suite, "Only the suites of this name");
  sub->add_option("--format", f->format, "text or md")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "md"}));
  sub->add_option("--chart", f->chart, "Also draw the trend of --suite as SVG to this file");
  sub->add_option("--alpha", f->alpha, "Significance level of a change point")
      ->capture_default_str()
      ->check(strictly_between(0, 1));
  sub->callback([f] {
    auto db = results::ResultsDb::open_for_reading(f->db);
    std::vector<analysis::SuiteData> suites;
    for (int64_t id : analysis::resolve_suites(db, "all")) {
      analysis::SuiteData s = analysis::load_suite(db, id);
      if (f->suite.empty() || s.suite.info.name == f->suite) suites.push_back(std::move(s));
    }
    if (suites.empty()) {
      throw Error(fmt::format("{}: no suite{} to show", f->db,
                              f->suite.empty() ? "" : " named '" + f->suite + "'"));
    }
    const auto history = check::build_history(suites, f->alpha);
    std::fputs((f->format == "md" ? check::history_markdown(history) : check::history_text(history))
                   .c_str(),
               stdout);
    if (f->chart.empty()) return;
    if (f->suite.empty()) throw Error("--chart draws one suite: give --suite NAME");
    const auto gnuplot = report::find_gnuplot();
    if (!gnuplot) throw Error("--chart needs gnuplot (not found on PATH)");
    std::vector<const check::CaseHistory*> cases;
    for (const auto& h : history) cases.push_back(&h);
    write_file_atomically(f->chart, report::render_svg(*gnuplot, report::history_chart(cases)));
    std::printf("wrote %s\n", f->chart.c_str());
  });
}

}  // namespace trainscope::cli
