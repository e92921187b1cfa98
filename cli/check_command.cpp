// trainscope check: regression gate for CI. Compares the current suite with a
// baseline (a results database or a baseline JSON), and/or checks ratio rules
// between cases of the current suite.
//
//   trainscope check --db current.db --baseline baseline.json --markdown check.md
//   trainscope check --db current.db --ratio "fused/per-tensor<=1.10"
//   trainscope check --db results.db --save-baseline baseline.json
//
// The logic lives in check/regression_check.h; this file only maps flags.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/validators.h"
#include "base/check.h"
#include "base/atomic_file.h"
#include "check/regression_check.h"

namespace trainscope::cli {

void add_check_command(CLI::App& app) {
  struct Flags {
    std::string db;
    std::string baseline;
    std::string baseline_suite = "latest";
    std::string suite = "latest";
    double threshold = check::kDefaultThresholdPct;
    double alpha = 0.05;
    double loss_tolerance = 1e-4;
    std::vector<std::string> ratios;
    std::string markdown;
    std::string save_baseline;
    bool allow_inconclusive = false;
    bool timings_across_machines = false;
    bool exact_only = false;
    bool allow_kernel_change = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "check",
      "Check a suite for regressions. Exit 0 pass, 1 regression, 2 bad input (including a\n"
      "gate that cannot detect a slowdown of --threshold: INCONCLUSIVE).\n"
      "Cases are matched by name within the suite of the same name; their configurations\n"
      "must be identical. Timings (step time median and tokens/s; busbw per message size of\n"
      "an all-reduce sweep) are compared on one figure per usable repetition: a run's steps\n"
      "are not independent samples and never decide a verdict. A timing regresses only when\n"
      "a Mann-Whitney U test over the repetitions is significant (p < --alpha) AND the\n"
      "median is worse by more than --threshold percent. Each row shows the change with its\n"
      "Hodges-Lehmann 95% interval and the smallest slowdown the comparison detects with\n"
      "80% power at the repetitions' noise (detectable). A row whose repetitions are too few\n"
      "for p ever to go below --alpha (3 vs 3 cannot go below 0.1), or whose detectable\n"
      "slowdown exceeds --threshold, is INCONCLUSIVE and names the repetitions a side it\n"
      "needs; unless --allow-inconclusive the check then exits 2 when nothing regressed.\n"
      "Deterministic figures of the first usable repetition are compared exactly per rank:\n"
      "tracked peak bytes by category and total, collective calls and bytes (higher =\n"
      "regression, lower = improved, refresh the baseline); train and validation losses\n"
      "within --loss-tolerance. A case usable in the baseline that failed now is a\n"
      "regression. A side measured on a loaded machine (docs/METRICS.md) prints a warning.\n"
      "Ratio rules compare two cases of the current suite (noisy CI machines): see --ratio.\n"
      "--save-baseline writes a baseline JSON (schema trainscope.baseline/1: per case the\n"
      "configuration, timing samples and deterministic figures, plus a \"ratios\" list of\n"
      "rule strings and the --threshold, which every later check applies) instead of checking.");
  sub->add_option("--db", flags->db, "Results database holding the current suite (required)")
      ->check(kDbFile);
  add_check_calibrate_command(*sub);
  sub->add_option("--suite", flags->suite, "Current suite: latest or a suite id")
      ->capture_default_str();
  sub->add_option("--baseline", flags->baseline,
                  "Baseline: a baseline JSON from --save-baseline, or a results database "
                  "(its latest suite with the current suite's name; an earlier one when it is "
                  "the --db file itself)");
  sub->add_option("--baseline-suite", flags->baseline_suite,
                  "With a baseline database: latest (as above) or a suite id")
      ->capture_default_str();
  CLI::Option* threshold =
      sub->add_option("--threshold", flags->threshold,
                      "Timing regressions: percent by which the median must get worse (default: "
                      "the baseline file's, else 5). With --save-baseline: stored in the file, "
                      "so that every later check of that baseline applies it")
          ->check(kNonNegative);
  sub->add_option("--alpha", flags->alpha, "Significance level of the Mann-Whitney U test")
      ->capture_default_str()
      ->check(strictly_between(0, 1));
  sub->add_option("--loss-tolerance", flags->loss_tolerance,
                  "Losses at a fixed seed may differ by this much relative to max(1, |loss|)")
      ->capture_default_str()
      ->check(kNonNegative);
  sub->add_flag("--timings-across-machines", flags->timings_across_machines,
                "Compare timings with a baseline measured on another machine (host, CPU model or "
                "core count differ); by default only its exact figures and the ratio rules are "
                "checked then, since a faster CPU is not a faster program");
  sub->add_flag("--exact-only", flags->exact_only,
                "Check only the exact figures (and ratio rules), never timings: the speed gate "
                "compares step times paired (trainscope compare), not against a stored baseline");
  sub->add_option("--ratio", flags->ratios,
                  "Ratio rule between two cases of the current suite, repeatable: "
                  "[step_time|tokens_per_s:]CASE_A/CASE_B<=BOUND or >=BOUND, on the medians "
                  "over repetitions (metric default step_time). E.g. \"fused/per-tensor<=1.10\": "
                  "fused's step time at most 10% above per-tensor's; "
                  "\"tokens_per_s:sharded/naive>=1.5\". Without --baseline only these are "
                  "checked. With --save-baseline they are stored in the baseline file");
  sub->add_flag("--allow-kernel-change", flags->allow_kernel_change,
                "Compare timings even when the baseline ran other GEMM kernels (OpenBLAS core) "
                "than the current run; without it that is an input error (exit 2)");
  sub->add_flag("--allow-inconclusive,--allow-too-few-samples", flags->allow_inconclusive,
                "Pass (exit 0 when nothing regressed) even when some timing comparisons could not "
                "detect a slowdown of --threshold (verdict INCONCLUSIVE); without it such a check "
                "exits 2, since a gate that cannot detect a slowdown must not pass silently");
  sub->add_option("--markdown", flags->markdown,
                  "Also write the result table as Markdown to this file (atomically)");
  sub->add_option("--save-baseline", flags->save_baseline,
                  "Write a baseline JSON of the --db suite to this file (atomically) and exit");
  sub->callback([flags, threshold, sub] {
    if (sub->got_subcommand("calibrate")) return;
    if (flags->db.empty())
      throw Error("check: --db is required (the database holding the current suite)");
    std::optional<double> threshold_pct;
    if (threshold->count() > 0) threshold_pct = flags->threshold;
    std::vector<check::RatioRule> ratios;
    for (const auto& text : flags->ratios) ratios.push_back(check::parse_ratio_rule(text));
    check::CheckSuite current = check::load_check_suite(flags->db, flags->suite);
    if (!flags->save_baseline.empty()) {
      if (current.cases.empty()) {
        throw Error("suite '" + current.name + "' (" + current.source +
                    ") has no cases: no baseline written");
      }
      current.ratios = ratios;
      current.threshold_pct = threshold_pct;
      check::save_baseline(current, flags->save_baseline);
      std::printf("wrote baseline %s: suite %s, %zu case(s), %zu ratio rule(s)%s\n",
                  flags->save_baseline.c_str(), current.name.c_str(), current.cases.size(),
                  ratios.size(),
                  threshold_pct ? fmt::format(", threshold {:g}%", *threshold_pct).c_str() : "");
      return;
    }
    std::optional<check::CheckSuite> baseline;
    if (!flags->baseline.empty()) {
      baseline = check::load_baseline_any(flags->baseline, flags->baseline_suite, current.name,
                                          flags->db, current.suite_id);
    }
    check::CheckOptions options;
    options.threshold_pct = threshold_pct;
    options.alpha = flags->alpha;
    options.loss_rel_tol = flags->loss_tolerance;
    options.ratios = ratios;
    options.timings_across_machines = flags->timings_across_machines;
    options.exact_only = flags->exact_only;
    options.allow_kernel_change = flags->allow_kernel_change;
    auto result = check::run_check(baseline ? &*baseline : nullptr, current, options);
    std::fputs(check::check_table_text(result).c_str(), stdout);
    if (!flags->markdown.empty()) {
      write_file_atomically(flags->markdown, check::check_markdown(result));
    }
    if (result.regressions() > 0) throw SilentExit{kExitFailure};
    if (result.inconclusive() > 0 && !flags->allow_inconclusive) {
      throw Error(fmt::format(
          "{} timing comparison(s) are INCONCLUSIVE: their repetitions are too few (or too "
          "noisy) to detect a slowdown of {:g}% at alpha {:g}. Run the suite with the "
          "repetitions the notes name (suite run --repeat N, both sides; `check calibrate` "
          "measures what this machine needs), or pass --allow-inconclusive to accept that",
          result.inconclusive(), result.threshold_pct, flags->alpha));
    }
  });
}

}  // namespace trainscope::cli
