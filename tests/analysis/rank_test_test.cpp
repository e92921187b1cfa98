// The Mann-Whitney U test against enumeration and known answers.
#include "analysis/rank_test.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace trainscope::analysis {
namespace {

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
  for (auto [m, n] :
       {std::pair<int64_t, int64_t>{1, 1}, {1, 5}, {2, 2}, {3, 3}, {4, 4}, {3, 8}, {5, 6}}) {
    auto [a, b] = separated(m, n);
    EXPECT_NEAR(mann_whitney_min_p_value(m, n), brute_force_p(a, b), 1e-12) << m << " vs " << n;
  }
  for (auto [m, n] : {std::pair<int64_t, int64_t>{1, 40},
                      {2, 30},
                      {20, 20},
                      {30, 30},
                      {31, 31},
                      {12, 60},
                      {100, 100}}) {
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
}  // namespace trainscope::analysis
