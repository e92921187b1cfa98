// Intervals and sensitivity from repetitions: how sure a headline figure is
// (a ratio of medians, a shift between two sets of runs) and the smallest
// change a comparison of that many repetitions could detect.
//
// The unit of replication is the repetition (one process, one run): the
// figures passed in are one per repetition (a run's median step time, its
// tokens/s), never the steps of one run, which share the process's state and
// are not independent (docs/METRICS.md, "Repetitions").
//
//  * bootstrap_ratio_of_medians: percentile bootstrap of median(a)/median(b),
//    each side resampled on its own, from a fixed seed (the same figures give
//    the same interval in every report).
//  * hodges_lehmann_shift / _ratio: the median of all pairwise differences
//    (of logs, for the ratio) and its distribution-free interval, the order
//    statistics the Mann-Whitney null distribution names (Hollander & Wolfe,
//    section 4.3; R's wilcox.test(conf.int = TRUE) without ties).
//  * minimum_detectable_effect: the shift (in the repetitions' standard
//    deviations of log time) the Mann-Whitney test detects with the given
//    power, simulated from a fixed seed for exact-test sizes (up to 30 a
//    side), Noether's (1987) formula beyond; times the measured noise, it
//    is the smallest slowdown the comparison detects.
//
// With fewer than two figures on a side there is no interval: low and high
// are NaN and has_interval() is false ("one repetition: no interval").
//
// Thread-safety: pure functions (the detectable shift of a size is cached
// under a mutex).
#ifndef TRAINSCOPE_ANALYSIS_INTERVALS_H_
#define TRAINSCOPE_ANALYSIS_INTERVALS_H_

#include <cstdint>
#include <limits>
#include <span>
#include <string>

namespace trainscope::analysis {

inline constexpr double kIntervalLevel = 0.95;
inline constexpr int kBootstrapResamples = 2000;
inline constexpr uint64_t kBootstrapSeed = 0x7261'696e'7363'6f70;  // "trainscop"

// An estimate with its interval at `level` (two-sided).
struct Interval {
  double estimate = std::numeric_limits<double>::quiet_NaN();
  double low = std::numeric_limits<double>::quiet_NaN();
  double high = std::numeric_limits<double>::quiet_NaN();
  double level = kIntervalLevel;
  bool has_interval() const;
  bool contains(double x) const { return has_interval() && low <= x && x <= high; }
};

// "1.43x [1.38, 1.49]" with digits after the point and `suffix` after each
// number ("x", " ms", "%"); "1.43x (one repetition: no interval)" without an
// interval; "-" when there is no estimate.
std::string format_interval(const Interval& interval, int digits, const std::string& suffix);
// A ratio as a signed change: "-40% [-52%, -31%]" for 0.60 [0.48, 0.69] at
// digits 0; "-40% (one repetition: no interval)" without an interval, "-"
// without an estimate.
std::string format_change(const Interval& ratio, int digits);

// The interval of median(a) / median(b). Values must be positive.
Interval bootstrap_ratio_of_medians(std::span<const double> a, std::span<const double> b,
                                    uint64_t seed = kBootstrapSeed,
                                    int resamples = kBootstrapResamples,
                                    double level = kIntervalLevel);

// The interval of one figure's median (tokens/s of a case).
Interval bootstrap_median(std::span<const double> x, uint64_t seed = kBootstrapSeed,
                          int resamples = kBootstrapResamples, double level = kIntervalLevel);

// Hodges-Lehmann estimate of the shift a - b and its interval. When the
// sizes cannot give the level (1 vs 1, 2 vs 2 at 95%) the interval is the
// widest there is: the smallest and largest pairwise difference, with level
// set to what it covers.
Interval hodges_lehmann_shift(std::span<const double> a, std::span<const double> b,
                              double level = kIntervalLevel);

// The same on logs, returned as a ratio a / b (for positive times).
Interval hodges_lehmann_ratio(std::span<const double> a, std::span<const double> b,
                              double level = kIntervalLevel);

// Standard normal quantile: Phi^-1(p), p in (0, 1).
double normal_quantile(double p);

// The repetitions' relative noise: 1.4826 x the median absolute deviation of
// the logs of each side's figures about that side's median, pooled (the
// standard deviation of normal figures, about stddev / mean for small
// spreads, unmoved by a few preempted runs, as the rank test is not).
// NaN when no side has two figures.
double relative_noise(std::span<const double> a, std::span<const double> b);

// The smallest relative change (0.12 = 12%) a two-sided Mann-Whitney test at
// `alpha` on m vs n repetitions detects with probability `power` when the
// figures' relative noise is `noise`. Infinity when the sizes cannot reach
// p < alpha at all or the noise is not finite.
double minimum_detectable_effect(double noise, int64_t m, int64_t n, double alpha = 0.05,
                                 double power = 0.8);

// The fewest repetitions n per side (n vs n) whose minimum detectable effect
// is at most `effect`; `limit` + 1 when even `limit` are not enough.
int64_t repetitions_for_effect(double noise, double effect, double alpha = 0.05, double power = 0.8,
                               int64_t limit = 200);

}  // namespace trainscope::analysis

#endif  // TRAINSCOPE_ANALYSIS_INTERVALS_H_
