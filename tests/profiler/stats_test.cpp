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

// Exact two-sided p by enumerating every split of the pooled values.
double brute_force_p(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> pooled(a);
  pooled.insert(pooled.end(), b.begin(), b.end());
  const int n = static_cast<int>(pooled.size());
  const int m = static_cast<int>(a.size());
  auto u_of = [&](unsigned mask) {
    double u = 0;
    for (int i = 0; i < n; ++i)
      if (mask >> i & 1u)
        for (int j = 0; j < n; ++j)
          if (!(mask >> j & 1u)) u += pooled[i] > pooled[j] ? 1.0 : 0.0;
    return u;
  };
  const double observed = u_of((1u << m) - 1);
  double below = 0, above = 0, total = 0;
  for (unsigned mask = 0; mask < (1u << n); ++mask) {
    if (__builtin_popcount(mask) != m) continue;
    const double u = u_of(mask);
    total += 1;
    below += u <= observed;
    above += u >= observed;
  }
  return std::min(1.0, 2.0 * std::min(below, above) / total);
}

TEST(MannWhitneyTest, SeparatedSmallSamplesExact) {
  const std::vector<double> a{1, 2, 3}, b{4, 5, 6};
  const MannWhitneyResult r = mann_whitney_u(a, b);
  EXPECT_EQ(r.method, MannWhitneyMethod::kExact);
  EXPECT_DOUBLE_EQ(r.u, 0.0);
  EXPECT_NEAR(r.p_value, 0.1, 1e-12);  // 2 / C(6,3)
  EXPECT_DOUBLE_EQ(mann_whitney_u(b, a).u, 9.0);
}

TEST(MannWhitneyTest, ExactMatchesEnumeration) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> d(0, 1);
  for (int trial = 0; trial < 5; ++trial) {
    std::vector<double> a, b;
    for (int i = 0; i < 6; ++i) a.push_back(d(rng));
    for (int i = 0; i < 7; ++i) b.push_back(d(rng) + 0.2 * trial);
    const MannWhitneyResult r = mann_whitney_u(a, b);
    ASSERT_EQ(r.method, MannWhitneyMethod::kExact);
    EXPECT_NEAR(r.p_value, brute_force_p(a, b), 1e-12) << "trial " << trial;
  }
}

TEST(MannWhitneyTest, TiesUseNormalWithTieCorrection) {
  const std::vector<double> a{1, 2, 2, 3, 3, 3}, b{2, 3, 4, 4, 5};
  const MannWhitneyResult r = mann_whitney_u(a, b);
  EXPECT_EQ(r.method, MannWhitneyMethod::kNormal);
  // U by pair counting, independent of the ranks used inside.
  double u = 0;
  for (double x : a)
    for (double y : b) u += x > y ? 1.0 : (x == y ? 0.5 : 0.0);
  EXPECT_DOUBLE_EQ(r.u, u);
  // Tie groups in the pool of 11: {1}, {2 x3}, {3 x4}, {4 x2}, {5}.
  const double tie = (27 - 3) + (64 - 4) + (8 - 2);
  const double var = 30.0 / 12.0 * (12.0 - tie / (11.0 * 10.0));
  const double z = (std::abs(u - 15.0) - 0.5) / std::sqrt(var);
  EXPECT_NEAR(r.p_value, std::erfc(z / std::sqrt(2.0)), 1e-12);
  EXPECT_LT(r.z, 0.0);  // a tends to be smaller
}

TEST(MannWhitneyTest, LargeShiftedSamplesAreSignificantSameAreNot) {
  std::mt19937 rng(11);
  std::normal_distribution<double> d(0, 1);
  std::vector<double> a, b, c;
  for (int i = 0; i < 60; ++i) {
    a.push_back(d(rng));
    b.push_back(d(rng) + 1.0);
    c.push_back(d(rng));
  }
  const MannWhitneyResult shifted = mann_whitney_u(a, b);
  EXPECT_EQ(shifted.method, MannWhitneyMethod::kNormal);
  EXPECT_LT(shifted.p_value, 1e-4);
  EXPECT_GT(mann_whitney_u(a, c).p_value, 0.01);
}

// The smallest reachable p is the p of completely separated samples, by
// enumeration where that is feasible and by the test itself on either method.
TEST(MannWhitneyTest, MinPValueIsThePOfSeparatedSamples) {
  auto separated = [](int64_t m, int64_t n) {
    std::vector<double> a, b;
    for (int64_t i = 0; i < m; ++i) a.push_back(static_cast<double>(i));
    for (int64_t i = 0; i < n; ++i) b.push_back(static_cast<double>(m + i));
    return std::pair{a, b};
  };
  for (auto [m, n] : {std::pair<int64_t, int64_t>{1, 1}, {1, 5}, {2, 2}, {3, 3}, {4, 4},
                      {3, 8}, {5, 6}}) {
    auto [a, b] = separated(m, n);
    EXPECT_NEAR(mann_whitney_min_p_value(m, n), brute_force_p(a, b), 1e-12) << m << " vs " << n;
  }
  for (auto [m, n] : {std::pair<int64_t, int64_t>{1, 40}, {2, 30}, {20, 20}, {30, 30}, {31, 31},
                      {12, 60}, {100, 100}}) {
    auto [a, b] = separated(m, n);
    const double expected = mann_whitney_u(a, b).p_value;
    EXPECT_NEAR(mann_whitney_min_p_value(m, n), expected, 1e-9 * expected) << m << " vs " << n;
    EXPECT_NEAR(mann_whitney_min_p_value(n, m), expected, 1e-9 * expected) << n << " vs " << m;
  }
  // More samples reach further (within the exact method; the normal
  // approximation beyond kMannWhitneyExactMax is coarser in the far tail).
  for (int64_t m = 1; m < kMannWhitneyExactMax; ++m) {
    EXPECT_LE(mann_whitney_min_p_value(m + 1, m), mann_whitney_min_p_value(m, m)) << m;
  }
  EXPECT_EQ(mann_whitney_min_p_value(0, 5), 1.0);
}

TEST(MannWhitneyTest, DegenerateInputsGiveNoEvidence) {
  const std::vector<double> empty, one{1.0}, same{2, 2, 2}, same2{2, 2};
  EXPECT_EQ(mann_whitney_u(empty, one).p_value, 1.0);
  EXPECT_EQ(mann_whitney_u(same, same2).p_value, 1.0);
}

}  // namespace
}  // namespace trainscope::profiler
