// What a regression check (check/regression_check.h) is asked and answers,
// row by row: its options, a row of the comparison and its verdict. Apart
// from the check itself so that the parts that fill rows (the timing rows,
// check/timing_rows.h) sit below it.
//
// Thread-safety: plain values.
#ifndef TRAINSCOPE_CHECK_CHECK_ROW_H_
#define TRAINSCOPE_CHECK_CHECK_ROW_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "check/baseline.h"

namespace trainscope::check {

inline constexpr double kDefaultThresholdPct = 5;

struct CheckOptions {
  // Timing regressions: median worse by more than this, percent. Unset: the
  // baseline's threshold_pct, else kDefaultThresholdPct.
  std::optional<double> threshold_pct;
  double alpha = 0.05;            // Mann-Whitney significance level
  double loss_rel_tol = 1e-4;     // losses: |a - b| <= tol * max(1, |a|)
  std::vector<RatioRule> ratios;  // in addition to the baseline's
  // Compare timings with a baseline measured on another machine (by default
  // they are not: a 2x faster CPU is not an improvement of the code).
  bool timings_across_machines = false;
  // Compare only the exact figures and the ratio rules: timings are left to
  // the paired speed gate (trainscope compare), whatever the machines.
  bool exact_only = false;
  // Compare timings of runs on different GEMM kernels (by default that is
  // an input error: a kernel change is not a code change).
  bool allow_kernel_change = false;
};

// kInconclusive: a timing comparison that could not have detected a slowdown
// of the threshold (see above); shown as "INCONCLUSIVE", never as "ok".
enum class Verdict { kSame, kImproved, kRegression, kInfo, kInconclusive };
std::string_view to_string(Verdict v);

struct CheckRow {
  std::string case_name;
  std::string metric;
  std::string baseline;  // formatted
  std::string current;
  std::string change;   // e.g. "+51.2%", timings "+51.2% [+40.3%, +60.0%]"
  std::string p_value;  // "" when no test
  Verdict verdict = Verdict::kSame;
  std::string note;
  // Timings: the smallest slowdown the comparison detects with 80% power at
  // the repetitions' noise, e.g. "7.5%"; "-" when it cannot detect any.
  std::string detectable;
};

}  // namespace trainscope::check

#endif  // TRAINSCOPE_CHECK_CHECK_ROW_H_
