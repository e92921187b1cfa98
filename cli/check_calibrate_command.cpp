// trainscope check calibrate: how good a regression gate is on this machine.
//
//   trainscope check calibrate smoke --runs 5 --db cal.db --save-baseline smoke.json
//
// Runs the suite K times (the same code: A/A), checks every pair of runs
// against each other as the gate would, and prints the false-alarm rate and
// each timed case's noise; the logic is check/calibration.h.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/check.h"
#include "cli/commands.h"
#include "cli/validators.h"
#include "check/baseline.h"
#include "check/calibration.h"
#include "suites/runner.h"
#include "suites/suite_config.h"

namespace trainscope::cli {

void add_check_calibrate_command(CLI::App& check) {
  struct Flags {
    std::string suite;
    int runs = 5;
    std::string db = "calibration.db";
    int repeat = 0;
    double threshold = check::kDefaultThresholdPct;
    double alpha = 0.05;
    std::string save_baseline;
    std::vector<std::string> ratios;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cal = check.add_subcommand(
      "calibrate",
      "Measure the regression gate on this machine: run the suite --runs times with the same\n"
      "code (each run with its repetitions, interleaved and shuffled), check every pair of runs\n"
      "against each other as `check` would (a timing regression there is a false alarm), and\n"
      "print the A/A false-alarm rate, each timed case's run-to-run noise, the smallest\n"
      "slowdown one run detects against the pooled runs, and the repetitions a side a gate of\n"
      "--threshold needs. --save-baseline writes the runs pooled as one baseline carrying the\n"
      "threshold, those repetitions and the calibration. Exit 0; 1 when a case failed in a\n"
      "run (nothing is calibrated or written); 2 on bad input.");
  cal->add_option("suite", f->suite, "Built-in suite name or a suite .toml file")->required();
  cal->add_option("--runs", f->runs, "How many times to run the suite (at least 2)")
      ->capture_default_str()
      ->check(whole_number<int>(2));
  cal->add_option("--db", f->db, "Results database the runs go to (created if missing)")
      ->capture_default_str()
      ->check(kDbFile);
  cal->add_option("--repeat", f->repeat, "Repetitions per run (default: the suite's)")
      ->check(whole_number<int>(1));
  cal->add_option("--threshold", f->threshold, "The gate's threshold, percent")
      ->capture_default_str()
      ->check(kNonNegative);
  cal->add_option("--alpha", f->alpha, "Significance level of the Mann-Whitney U test")
      ->capture_default_str()
      ->check(strictly_between(0, 1));
  cal->add_option("--ratio", f->ratios, "Ratio rules to store in the baseline (as check --ratio)");
  cal->add_option("--save-baseline", f->save_baseline,
                  "Write the pooled runs as a baseline JSON with the calibration");
  cal->callback([f] {
    // Before minutes of runs: a baseline that cannot be written is bad input now.
    if (!f->save_baseline.empty()) check_writable(f->save_baseline, "--save-baseline");
    std::vector<check::RatioRule> ratios;
    for (const auto& text : f->ratios) ratios.push_back(check::parse_ratio_rule(text));
    const suites::Suite suite = suites::resolve_suite(f->suite);
    std::vector<check::CheckSuite> runs;
    for (int k = 0; k < f->runs; ++k) {
      std::fprintf(stderr, "calibration run %d of %d\n", k + 1, f->runs);
      suites::RunnerOptions o;
      o.db_path = f->db;
      o.repeat = f->repeat;
      o.command_line = this_command_line();
      const suites::SuiteResult r = suites::run_suite(suite, o);
      if (r.interrupted) throw SilentExit{130};
      runs.push_back(check::load_check_suite(f->db, std::to_string(r.suite_id)));
    }
    check::CheckOptions options;
    options.threshold_pct = f->threshold;
    options.alpha = f->alpha;
    const check::Calibration calibration = check::calibrate_gate(runs, options);
    std::fputs(check::calibration_text(calibration).c_str(), stdout);
    if (!f->save_baseline.empty()) {
      check::CheckSuite baseline = check::pooled_baseline(runs, calibration);
      baseline.ratios = ratios;
      check::save_baseline(baseline, f->save_baseline);
      std::printf("wrote baseline %s: %d runs pooled, threshold %g%%, %lld repetitions needed\n",
                  f->save_baseline.c_str(), f->runs, f->threshold,
                  static_cast<long long>(calibration.repetitions_needed));
    }
  });
}

}  // namespace trainscope::cli
