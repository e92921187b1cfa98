// Paired comparison of two builds: is the head slower than the base?
//
// The figures are one per pair: a base run and a head run of the same case
// back to back (their order drawn at random), each reduced to its step-time
// median, the pair to log(head / base). Pairing close in time is what makes
// the comparison hold on a machine whose speed drifts over minutes: drift
// between two measuring occasions is a bias no number of repetitions
// removes, while within a pair it cancels (Kalibera & Jones, ISMM 2013;
// Abedi & Brecht, ICPE 2017). A pair, not a step, is the unit: a run's steps
// share the process's state and are not independent samples.
//
//  * signed_rank_null_cdf: the exact null distribution of the Wilcoxon
//    signed-rank statistic (up to kSignedRankExactMax pairs), the normal
//    approximation beyond.
//  * hodges_lehmann_paired: the median of the Walsh averages of the log
//    ratios (the one-sample Hodges-Lehmann estimate) and its distribution-free
//    interval, the Walsh averages the signed-rank null distribution names
//    (Hollander & Wolfe, section 3.3; R's wilcox.test(x, conf.int = TRUE)),
//    returned as a ratio head / base.
//  * decide_pairs: the sequential verdict against a threshold. REGRESSION
//    when the interval lies above 1 and the estimate above 1 + threshold
//    (significantly slower, and by more than the threshold at the best
//    estimate); PASS when the interval lies below 1 + threshold (whatever
//    the head lost, it is less than the threshold); otherwise undecided:
//    add pairs, and at the cap INCONCLUSIVE, with the pairs a decision
//    would take at the noise measured (the interval narrows as 1/sqrt(n)).
//    No verdict before min_pairs: at 95% a signed-rank interval needs 6.
//
// Thread-safety: pure functions.
#ifndef TRAINSCOPE_ANALYSIS_PAIRED_H_
#define TRAINSCOPE_ANALYSIS_PAIRED_H_

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "analysis/intervals.h"

namespace trainscope::analysis {

inline constexpr int kSignedRankExactMax = 60;
// The fewest pairs whose signed-rank interval reaches 95%: 2 / 2^6 = 0.031.
inline constexpr int kMinPairsForInterval = 6;

// P(T+ <= t) under the null hypothesis (each pair's sign a fair coin), T+ the
// sum of the ranks of the positive differences among n without ties.
double signed_rank_null_cdf(int64_t n, int64_t t);

// Hodges-Lehmann estimate of the median log ratio and its interval at
// `level`, as ratios exp(.). With fewer than kMinPairsForInterval pairs at
// 95% the interval is the widest there is (the smallest and largest Walsh
// average), with level set to what it covers; one pair: no interval.
Interval hodges_lehmann_paired(std::span<const double> log_ratios, double level = kIntervalLevel);

enum class PairedVerdict { kPass, kRegression, kUndecided, kInconclusive, kFailed };
inline constexpr std::array<std::string_view, 5> kPairedVerdictNames = {
    "PASS", "REGRESSION", "UNDECIDED", "INCONCLUSIVE", "FAILED"};
std::string_view paired_verdict_name(PairedVerdict verdict);

struct PairedDecision {
  PairedVerdict verdict = PairedVerdict::kUndecided;
  Interval ratio;  // head / base
  int pairs = 0;
  // Undecided or inconclusive: about how many pairs in all the interval
  // would need to decide at the spread seen; 0 when decided.
  int pairs_needed = 0;
};

// The verdict on `log_ratios` (log(head / base) per pair) against
// threshold_pct (10 = 10% slower). `at_cap`: no more pairs will come, so an
// undecided comparison is INCONCLUSIVE.
PairedDecision decide_pairs(std::span<const double> log_ratios, double threshold_pct,
                            int min_pairs = kMinPairsForInterval, bool at_cap = false);

// "1.153x [1.12, 1.19]": a head / base ratio with its interval.
std::string format_ratio(const Interval& ratio);

}  // namespace trainscope::analysis

#endif  // TRAINSCOPE_ANALYSIS_PAIRED_H_
