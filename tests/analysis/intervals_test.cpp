// Intervals and the minimum detectable effect against published tables and
// synthetic data whose true answer is known (coverage, power).
#include "analysis/intervals.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "analysis/rank_test.h"

namespace trainscope::analysis {
namespace {

std::vector<double> lognormal_sample(std::mt19937_64& rng, int n, double median, double sigma) {
  std::normal_distribution<double> d(0, sigma);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(median * std::exp(d(rng)));
  return v;
}

// Critical values of the two-sided Mann-Whitney test at 0.05 from the
// published tables (e.g. Siegel & Castellan, table J): U <= c is significant.
TEST(IntervalsTest, NullCdfGivesThePublishedCriticalValues) {
  struct Row {
    int64_t m, n, critical;
  };
  for (const Row& r : {Row{5, 5, 2}, Row{8, 8, 13}, Row{10, 10, 23}, Row{20, 20, 127}}) {
    EXPECT_LE(mann_whitney_null_cdf(r.m, r.n, r.critical), 0.025) << r.m;
    EXPECT_GT(mann_whitney_null_cdf(r.m, r.n, r.critical + 1), 0.025) << r.m;
  }
  EXPECT_EQ(mann_whitney_null_cdf(4, 4, -1), 0.0);
  EXPECT_EQ(mann_whitney_null_cdf(4, 4, 16), 1.0);
}

TEST(IntervalsTest, NormalQuantileMatchesTheTable) {
  EXPECT_NEAR(normal_quantile(0.975), 1.959964, 1e-6);
  EXPECT_NEAR(normal_quantile(0.8), 0.841621, 1e-6);
  EXPECT_NEAR(normal_quantile(0.5), 0.0, 1e-12);
  EXPECT_TRUE(std::isnan(normal_quantile(1.0)));
}

// For 10 vs 10 the interval is [D(24), D(77)] of the sorted pairwise
// differences (critical value 23), covering 1 - 2 P(U <= 23) = 95.67%.
TEST(IntervalsTest, HodgesLehmannTakesTheTablesOrderStatistics) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> d(0, 1);
  std::vector<double> a, b;
  for (int i = 0; i < 10; ++i) {
    a.push_back(d(rng) + 2);
    b.push_back(d(rng));
  }
  std::vector<double> diffs;
  for (double x : a)
    for (double y : b) diffs.push_back(x - y);
  std::sort(diffs.begin(), diffs.end());
  const Interval hl = hodges_lehmann_shift(a, b);
  EXPECT_DOUBLE_EQ(hl.estimate, 0.5 * (diffs[49] + diffs[50]));
  EXPECT_DOUBLE_EQ(hl.low, diffs[23]);
  EXPECT_DOUBLE_EQ(hl.high, diffs[76]);
  EXPECT_NEAR(hl.level, 1 - 2 * mann_whitney_null_cdf(10, 10, 23), 1e-12);
  EXPECT_GT(hl.level, 0.95);
  EXPECT_LT(hl.level, 0.96);
}

TEST(IntervalsTest, HodgesLehmannCoversTheTrueShift) {
  std::mt19937_64 rng(17);
  int covered = 0;
  const int trials = 1000;
  for (int t = 0; t < trials; ++t) {
    const auto a = lognormal_sample(rng, 8, 1.25, 0.05);
    const auto b = lognormal_sample(rng, 8, 1.0, 0.05);
    covered += hodges_lehmann_ratio(a, b).contains(1.25);
  }
  // Distribution-free: 95.0% (8 vs 8 covers 1 - 2 P(U <= 13) = 0.9497).
  EXPECT_GT(covered, 0.92 * trials);
  EXPECT_LT(covered, 0.98 * trials);
}

TEST(IntervalsTest, BootstrapIsSeededAndCoversTheTrueRatio) {
  std::mt19937_64 rng(23);
  const auto a0 = lognormal_sample(rng, 6, 2.0, 0.1);
  const auto b0 = lognormal_sample(rng, 6, 1.0, 0.1);
  const Interval first = bootstrap_ratio_of_medians(a0, b0);
  const Interval again = bootstrap_ratio_of_medians(a0, b0);
  EXPECT_EQ(first.low, again.low);
  EXPECT_EQ(first.high, again.high);
  std::vector<double> sa(a0), sb(b0);
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  EXPECT_DOUBLE_EQ(first.estimate, (sa[2] + sa[3]) / (sb[2] + sb[3]));
  int covered = 0;
  const int trials = 300;
  for (int t = 0; t < trials; ++t) {
    const auto a = lognormal_sample(rng, 15, 1.2, 0.05);
    const auto b = lognormal_sample(rng, 15, 1.0, 0.05);
    covered += bootstrap_ratio_of_medians(a, b, 1000 + t, 1000).contains(1.2);
  }
  // The percentile bootstrap of medians covers a little under its level at
  // 15 a side; far from it would be a wrong quantile or a shared resample.
  EXPECT_GT(covered, 0.85 * trials);
  EXPECT_LT(covered, 0.995 * trials);
}

TEST(IntervalsTest, OneRepetitionHasNoInterval) {
  const std::vector<double> one{1.5}, two{1.0, 1.1};
  const Interval r = bootstrap_ratio_of_medians(one, two);
  EXPECT_DOUBLE_EQ(r.estimate, 1.5 / 1.05);
  EXPECT_FALSE(r.has_interval());
  EXPECT_EQ(format_interval(r, 2, "x"), "1.43x (one repetition: no interval)");
  EXPECT_FALSE(hodges_lehmann_shift(one, two).has_interval());
  EXPECT_FALSE(bootstrap_median(one).has_interval());
  Interval shown{1.43, 1.38, 1.49};
  EXPECT_EQ(format_interval(shown, 2, "x"), "1.43x [1.38x, 1.49x]");
  EXPECT_EQ(format_interval(Interval{}, 2, "x"), "-");
}

TEST(IntervalsTest, AChangeIsTheRatioLessOneSignedInPercent) {
  EXPECT_EQ(format_change(Interval{0.60, 0.48, 0.69}, 0), "-40% [-52%, -31%]");
  EXPECT_EQ(format_change(Interval{1.031, 0.988, 1.074}, 1), "+3.1% [-1.2%, +7.4%]");
  Interval one;
  one.estimate = 0.5;
  EXPECT_EQ(format_change(one, 0), "-50% (one repetition: no interval)");
  EXPECT_EQ(format_change(Interval{}, 0), "-");
}

// Planting the minimum detectable effect in synthetic repetitions: the U test
// flags it about as often as the power says, and half of it much less often.
TEST(IntervalsTest, MinimumDetectableEffectHasItsPower) {
  const double noise = 0.04;
  const int n = 12;
  const double mde = minimum_detectable_effect(noise, n, n);
  ASSERT_TRUE(std::isfinite(mde));
  std::mt19937_64 rng(31);
  auto power_at = [&](double effect) {
    int flagged = 0;
    for (int t = 0; t < 1000; ++t) {
      const auto base = lognormal_sample(rng, n, 1.0, noise);
      const auto slow = lognormal_sample(rng, n, 1.0 + effect, noise);
      flagged += mann_whitney_u(base, slow).p_value < 0.05;
    }
    return flagged / 1000.0;
  };
  EXPECT_NEAR(power_at(mde), 0.8, 0.06);
  EXPECT_LT(power_at(mde / 2), 0.5);
}

TEST(IntervalsTest, MinimumDetectableEffectNeedsReachableSizes) {
  EXPECT_TRUE(std::isinf(minimum_detectable_effect(0.01, 3, 3)));  // p >= 0.1
  EXPECT_TRUE(std::isinf(minimum_detectable_effect(std::nan(""), 10, 10)));
  EXPECT_LT(minimum_detectable_effect(0.02, 20, 20), minimum_detectable_effect(0.02, 6, 6));
  EXPECT_LT(minimum_detectable_effect(0.01, 6, 6), minimum_detectable_effect(0.02, 6, 6));
  const int64_t n = repetitions_for_effect(0.03, 0.05);
  EXPECT_LE(minimum_detectable_effect(0.03, n, n), 0.05);
  EXPECT_GT(minimum_detectable_effect(0.03, n - 1, n - 1), 0.05);
}

TEST(IntervalsTest, RelativeNoiseIsTheRobustSpreadOfLogs) {
  const std::vector<double> a{1.0, std::exp(0.2)}, b{2.0, 2.0 * std::exp(-0.2)};
  // Every log lies 0.1 from its side's median.
  EXPECT_NEAR(relative_noise(a, b), 1.4826 * 0.1, 1e-12);
  // A preempted repetition 50x slower does not make the runs noisy.
  const std::vector<double> c{1.0, 1.01, 0.99, 1.0, 50.0};
  EXPECT_LT(relative_noise(c, {}), 0.02);
  // Normal logs: about their standard deviation.
  std::mt19937_64 rng(3);
  EXPECT_NEAR(relative_noise(lognormal_sample(rng, 2000, 1.0, 0.05), {}), 0.05, 0.005);
  const std::vector<double> one{1.0};
  EXPECT_TRUE(std::isnan(relative_noise(one, one)));
}

}  // namespace
}  // namespace trainscope::analysis
