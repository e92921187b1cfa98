// Regression checks for CI: the current suite against a baseline (another
// database or a baseline JSON file written by save_baseline), plus ratio
// rules between cases of the current suite alone.
//
// What is compared, per case (matched by case name within the suite of the
// same name; the configuration must be identical, else it is an input error):
//  * Timings (noisy): step time median and tokens/s of training cases; busbw
//    per message size of all-reduce sweeps (higher is better). The unit is
//    the repetition: one figure per usable run on each side
//    (check/timing_rows.h). A regression needs both a significant
//    Mann-Whitney U test (p < alpha) and a median worse by more than the
//    threshold, as Google Benchmark's compare.py does. Each row shows the
//    change with its Hodges-Lehmann interval and the smallest slowdown it
//    could detect (80% power at the repetitions' noise).
//  * Inconclusive: too few repetitions for the test ever to reach p < alpha
//    (3 vs 3 cannot go below p = 0.1), or a detectable slowdown above the
//    threshold, gets Verdict::kInconclusive with the repetitions a side it
//    needs. It is neither "ok" nor a regression, and a gate must not contain
//    one: `trainscope check` exits 2 when there are such rows and no
//    regression, unless given --allow-inconclusive.
//  * Deterministic figures, from the first usable repetition: tracked peak
//    bytes by category and in total, collective calls and bytes, per rank,
//    compared exactly (more is a regression, less is reported as improved so
//    the baseline gets refreshed); train (rank 0) and validation losses at a
//    fixed seed, compared within a relative tolerance either way.
//  * Status: a case that was usable in the baseline and is not now is a
//    regression; a case new in the current suite is listed, not compared. A
//    sweep's run is usable when it ended ok with rows; a size of the baseline
//    missing from the current sweep is a regression.
//  * GEMM kernels: a case whose timings ran on other OpenBLAS kernels than
//    the baseline's (kernels/blas_core.h) is an input error naming both,
//    unless allowed (CheckOptions::allow_kernel_change: then a warning).
//  * Machine load: when either side of a compared case was measured on a
//    loaded machine (docs/METRICS.md, "Machine load"), a warning line
//    (CheckResult::warnings), not a regression: its timings may be the
//    machine's rather than the code's.
// Ratio rules ("[metric:]A/B<=bound" or ">="; metric step_time (default) or
// tokens_per_s) compare the medians of two cases of the current suite, which
// stays meaningful on noisy CI machines where absolute timings are not; the
// row shows the ratio's bootstrap interval over the repetitions.
//
// Input errors (trainscope::Error, exit code 2) name the culprit: a baseline
// from a newer schema, a baseline case missing from the current suite,
// configurations that differ (with the first differing field), an empty
// suite, a suite name mismatch, a ratio rule naming an unknown case.
//
// Thread-safety: pure functions; save_baseline writes atomically.
#ifndef TRAINSCOPE_CHECK_REGRESSION_CHECK_H_
#define TRAINSCOPE_CHECK_REGRESSION_CHECK_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/baseline.h"
#include "check/check_row.h"

namespace trainscope::check {

struct CheckResult {
  std::string suite;
  double threshold_pct = kDefaultThresholdPct;  // as applied
  double alpha = 0.05;
  std::string baseline_source;
  std::string current_source;
  std::vector<CheckRow> rows;
  std::vector<std::string> warnings;  // e.g. a side measured on a loaded machine
  int regressions() const;
  int inconclusive() const;  // rows with Verdict::kInconclusive
};

// `baseline` may be null: only the ratio rules are checked (there must be
// at least one).
CheckResult run_check(const CheckSuite* baseline, const CheckSuite& current,
                      const CheckOptions& options);

std::string check_table_text(const CheckResult& result);
std::string check_markdown(const CheckResult& result);

}  // namespace trainscope::check

#endif  // TRAINSCOPE_CHECK_REGRESSION_CHECK_H_
