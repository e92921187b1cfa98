// How trustworthy a regression gate is on this machine, measured: K runs of
// the same suite with the same code (A/A), every pair of them checked
// against each other as the gate would (a regression there is a false
// alarm), and each timed case's run-to-run noise, from which the repetitions
// a side a gate of the threshold needs follow (analysis/intervals.h).
// `trainscope check calibrate` runs the suite and calls this; the baseline it
// writes pools every run's repetitions (a baseline of K x R repetitions
// detects more than one of R) and carries the threshold, the repetitions
// needed and the calibration itself.
//
// Thread-safety: pure functions.
#ifndef TRAINSCOPE_CHECK_CALIBRATION_H_
#define TRAINSCOPE_CHECK_CALIBRATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/regression_check.h"

namespace trainscope::check {

struct CaseNoise {
  std::string case_name;
  int64_t repetitions = 0;  // step time medians over every run
  double noise = 0;         // relative: 1.4826 x MAD of log step time median, all of them
  // The smallest slowdown (fraction) a check of one run (R repetitions)
  // against the pooled baseline detects with 80% power.
  double detectable = 0;
  int64_t repetitions_needed = 0;  // a side, for the threshold
};

struct Calibration {
  std::string suite;
  int runs = 0;
  int64_t repetitions_per_run = 0;  // the fewest of any run's cases
  double threshold_pct = 0;
  double alpha = 0.05;
  int pairs = 0;
  int false_alarm_pairs = 0;              // pairs with a timing regression
  int inconclusive_pairs = 0;             // pairs with an inconclusive row
  std::vector<std::string> false_alarms;  // "run 1 vs 3: case fused step time median"
  std::vector<CaseNoise> cases;
  int64_t repetitions_needed = 0;  // the largest over the cases
  nlohmann::json to_json() const;
};

// `runs` are K >= 2 runs of one suite (same cases and configurations).
Calibration calibrate_gate(const std::vector<CheckSuite>& runs, const CheckOptions& options);

// The runs as one baseline: every usable run's timing samples pooled per
// case, the first run's deterministic figures, with the calibration's
// threshold, repetitions needed and the calibration record.
CheckSuite pooled_baseline(const std::vector<CheckSuite>& runs, const Calibration& calibration);

std::string calibration_text(const Calibration& calibration);

}  // namespace trainscope::check

#endif  // TRAINSCOPE_CHECK_CALIBRATION_H_
