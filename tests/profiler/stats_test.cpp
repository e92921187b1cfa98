#include "profiler/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace trainscope::profiler {
namespace {

TEST(StatsTest, EmptyIsNaNNotZero) {
  const Summary s = summarize({});
  EXPECT_EQ(s.count, 0);
  EXPECT_TRUE(std::isnan(s.mean));
  EXPECT_TRUE(std::isnan(s.median));
  EXPECT_TRUE(std::isnan(s.stddev));
  EXPECT_TRUE(std::isnan(s.p99));
  EXPECT_TRUE(std::isnan(s.min));
}

TEST(StatsTest, OneSample) {
  const std::vector<double> x{2.5};
  const Summary s = summarize(x);
  EXPECT_EQ(s.count, 1);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.p95, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 2.5);
  EXPECT_DOUBLE_EQ(s.max, 2.5);
  EXPECT_EQ(s.stddev, 0.0);
  EXPECT_EQ(s.cv, 0.0);
}

TEST(StatsTest, TwoSamplesUseSampleStddevAndInterpolate) {
  const std::vector<double> x{3.0, 1.0};
  const Summary s = summarize(x);
  EXPECT_DOUBLE_EQ(s.mean, 2.0);
  EXPECT_DOUBLE_EQ(s.median, 2.0);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(2.0));  // n - 1 denominator
  EXPECT_DOUBLE_EQ(s.cv, std::sqrt(2.0) / 2.0);
  EXPECT_DOUBLE_EQ(s.p95, 1.0 + 0.95 * 2.0);  // type 7
  EXPECT_DOUBLE_EQ(s.p99, 1.0 + 0.99 * 2.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 3.0);
}

TEST(StatsTest, ConstantSeriesHasNoSpread) {
  const std::vector<double> x(1000, 0.1);
  const Summary s = summarize(x);
  EXPECT_NEAR(s.mean, 0.1, 1e-15);
  EXPECT_NEAR(s.stddev, 0.0, 1e-15);
  EXPECT_NEAR(s.cv, 0.0, 1e-13);
  EXPECT_DOUBLE_EQ(s.p50, 0.1);
  EXPECT_DOUBLE_EQ(s.p99, 0.1);
}

TEST(StatsTest, PercentilesOfOneToHundredOneMatchType7) {
  std::vector<double> x;
  for (int i = 101; i >= 1; --i) x.push_back(i);  // unsorted on purpose
  const Summary s = summarize(x);
  EXPECT_DOUBLE_EQ(s.median, 51.0);
  EXPECT_DOUBLE_EQ(s.p95, 96.0);
  EXPECT_DOUBLE_EQ(s.p99, 100.0);
  EXPECT_DOUBLE_EQ(percentile_sorted(std::vector<double>{0, 10}, 0.25), 2.5);
}

TEST(StatsTest, SampleSetMergeEqualsSummaryOfUnion) {
  SampleSet a, b, all;
  std::mt19937 rng(7);
  std::normal_distribution<double> d(1.0, 0.2);
  for (int i = 0; i < 50; ++i) {
    const double x = d(rng);
    a.add(x);
    all.add(x);
  }
  for (int i = 0; i < 30; ++i) {
    const double x = d(rng) + 0.5;
    b.add(x);
    all.add(x);
  }
  a.merge(b);
  const Summary m = a.summary(), u = all.summary();
  EXPECT_EQ(m.count, 80);
  EXPECT_DOUBLE_EQ(m.median, u.median);
  EXPECT_DOUBLE_EQ(m.p95, u.p95);
  EXPECT_NEAR(m.stddev, u.stddev, 1e-12);
}

TEST(StatsTest, RunningMomentsMergeMatchesTwoPass) {
  std::vector<double> x;
  RunningMoments left, right;
  for (int i = 0; i < 40; ++i) {
    const double v = 1e6 + (i % 7) * 0.25;  // large offset: Welford must stay accurate
    x.push_back(v);
    (i < 15 ? left : right).add(v);
  }
  left.merge(right);
  const Summary s = summarize(x);
  EXPECT_EQ(left.count(), 40);
  EXPECT_NEAR(left.mean(), s.mean, 1e-9);
  EXPECT_NEAR(left.stddev(), s.stddev, 1e-9);
  EXPECT_EQ(left.min(), s.min);
  EXPECT_EQ(left.max(), s.max);
  RunningMoments empty;
  EXPECT_TRUE(std::isnan(empty.mean()));
  empty.merge(left);
  EXPECT_EQ(empty.count(), 40);
}

}  // namespace
}  // namespace trainscope::profiler
