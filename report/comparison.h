// The comparison every suite report opens with: each case against the
// suite's baseline case, and, for scaling suites, Amdahl's law fitted to the
// measured speedups.
//
// Baseline: the first case whose mode is "naive" (one process, the reference
// every data-parallel mode is measured against); failing that, the case
// named "naive"; failing that, the first case. Speedup is tokens/s over the
// baseline's tokens/s; scaling efficiency is speedup over the growth in
// ranks (world_size / baseline world_size), so 1.0 means perfect scaling.
// Both carry 95% intervals from the repetitions (one tokens/s per usable
// repetition): the bootstrap of the median, and of the ratio of the medians
// (analysis/intervals.h); none with one repetition.
//
// Thread-safety: pure functions over plain values.
#ifndef TRAINSCOPE_REPORT_COMPARISON_H_
#define TRAINSCOPE_REPORT_COMPARISON_H_

#include <optional>
#include <string>
#include <vector>

#include "analysis/intervals.h"
#include "analysis/suite_data.h"

namespace trainscope::report {

struct ComparisonRow {
  std::string case_name;
  bool is_baseline = false;
  analysis::CaseFigures figures;
  double speedup = 0;                   // NaN when either side has no tokens/s
  double efficiency = 0;                // speedup / (world_size / baseline world_size)
  analysis::Interval tokens_interval;   // of figures.tokens_per_s
  analysis::Interval speedup_interval;  // none for the baseline itself
};

// One tokens/s per usable repetition of a case: the unit its intervals are of.
std::vector<double> repetition_tokens_per_s(const analysis::CaseData& c);

// "1.43x [1.38, 1.49]" with `digits` after the point, or the value alone
// without an interval ("-" for NaN).
std::string with_interval(double value, const analysis::Interval& interval, int digits,
                          const std::string& suffix);

struct Comparison {
  std::string baseline_case;
  std::vector<ComparisonRow> rows;  // in suite order
};

Comparison compare_cases(const analysis::SuiteData& suite);

// Amdahl's law: speedup(n) = 1 / (f + (1 - f) / n) with serial fraction f.
// Fitted by least squares on the normalized time 1 / speedup, which is linear
// in f: 1/S - 1/n = f (1 - 1/n), so f = sum(x y) / sum(x x) with x = 1 - 1/n
// and y = 1/S - 1/n, clamped to [0, 1]. Points with n = 1 carry no
// information about f and drop out.
struct AmdahlPoint {
  double n = 1;  // relative number of ranks
  double speedup = 1;
  analysis::Interval interval;  // of the speedup, over the repetitions; none with one
};
struct AmdahlFit {
  double serial_fraction = 0;
  double rms_residual = 0;  // of the speedups, in speedup units
  int points = 0;           // points with n > 1 used
};
// std::nullopt when no point has n > 1 and a finite positive speedup.
std::optional<AmdahlFit> fit_amdahl(const std::vector<AmdahlPoint>& points);
double amdahl_speedup(double serial_fraction, double n);

// The cores a case's job computed on (first usable repetition): hosts x
// cores_per_host when pinned, else ranks x threads per rank capped by the
// cores online; NaN when unknown (no usable run).
double case_cores(const analysis::CaseData& c);

// The (n, speedup) points of a suite's usable cases relative to the
// baseline, when the suite is a scaling study: its name mentions "scaling" or
// its usable cases span at least three world sizes. n is the growth in
// compute (case_cores over the baseline's; the growth in ranks when cores are
// unknown): cases that add ranks but no cores have n = 1 and say nothing
// about a serial fraction.
std::vector<AmdahlPoint> scaling_points(const analysis::SuiteData& suite,
                                        const Comparison& comparison);

// Why a scaling study gets no Amdahl fit although it varies the ranks: its
// total compute does not grow with them (every case on the same cores).
// Empty when fitted, or when the suite is not a scaling study.
std::string amdahl_not_fitted_reason(const analysis::SuiteData& suite,
                                     const Comparison& comparison);

// For one-host suites whose data-parallel cases use no more cores than the
// one-process baseline: why they cannot be faster than it (empty otherwise).
std::string same_cores_note(const analysis::SuiteData& suite, const Comparison& comparison);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_COMPARISON_H_
