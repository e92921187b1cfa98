// The paired comparison's statistics against published tables, R's
// wilcox.test, and synthetic pairs whose true ratio is known.
#include "analysis/paired.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace trainscope::analysis {
namespace {

// Critical values of the two-sided signed-rank test at 0.05 (e.g. Siegel &
// Castellan, table G): T <= c is significant. 70 is beyond the exact table
// (normal approximation).
TEST(PairedTest, NullCdfGivesThePublishedCriticalValues) {
  struct Row {
    int64_t n, critical;
  };
  for (const Row& r : {Row{6, 0}, Row{8, 3}, Row{10, 8}, Row{20, 52}, Row{30, 137}}) {
    EXPECT_LE(signed_rank_null_cdf(r.n, r.critical), 0.025) << r.n;
    EXPECT_GT(signed_rank_null_cdf(r.n, r.critical + 1), 0.025) << r.n;
  }
  EXPECT_EQ(signed_rank_null_cdf(5, 0), 1.0 / 32);  // no interval at 95% below 6 pairs
  EXPECT_EQ(signed_rank_null_cdf(4, -1), 0.0);
  EXPECT_EQ(signed_rank_null_cdf(4, 10), 1.0);
  EXPECT_NEAR(signed_rank_null_cdf(70, 70 * 71 / 4), 0.5, 0.01);
}

// R: wilcox.test(x, conf.int = TRUE) for x below gives the estimate 0.115 and
// the interval [0.05, 0.175] at an achieved level of 0.961.
TEST(PairedTest, HodgesLehmannMatchesR) {
  const std::vector<double> x = {0.12, 0.05, 0.2, 0.08, 0.15, 0.11, 0.02, 0.18};
  const Interval iv = hodges_lehmann_paired(x);
  EXPECT_NEAR(std::log(iv.estimate), 0.115, 1e-12);
  EXPECT_NEAR(std::log(iv.low), 0.05, 1e-12);
  EXPECT_NEAR(std::log(iv.high), 0.175, 1e-12);
  EXPECT_NEAR(iv.level, 0.9609375, 1e-12);
}

TEST(PairedTest, FewPairsGiveTheWidestIntervalAndOneNone) {
  const Interval one = hodges_lehmann_paired(std::vector<double>{0.1});
  EXPECT_FALSE(one.has_interval());
  const Interval three = hodges_lehmann_paired(std::vector<double>{0.1, -0.2, 0.3});
  EXPECT_NEAR(std::log(three.low), -0.2, 1e-12);
  EXPECT_NEAR(std::log(three.high), 0.3, 1e-12);
  EXPECT_NEAR(three.level, 0.75, 1e-12);
}

// Pairs of noise `sigma` around log(ratio).
std::vector<double> pairs(std::mt19937_64& rng, int n, double ratio, double sigma) {
  std::normal_distribution<double> noise(0, sigma);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(std::log(ratio) + noise(rng));
  return v;
}

TEST(PairedTest, TheIntervalCoversTheTrueRatioAtItsLevel) {
  std::mt19937_64 rng(7);
  int covered = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t)
    covered += hodges_lehmann_paired(pairs(rng, 12, 1.1, 0.05)).contains(1.1);
  EXPECT_GT(covered, trials * 0.93);
  EXPECT_LT(covered, trials * 0.985);
}

TEST(PairedTest, DecidesRegressionPassAndUndecided) {
  // All slower by 15-25%: significant and above a 10% threshold.
  const std::vector<double> slow = {0.15, 0.2, 0.18, 0.22, 0.17, 0.19};
  EXPECT_EQ(decide_pairs(slow, 10).verdict, PairedVerdict::kRegression);
  // Five pairs never decide: no 95% interval yet.
  EXPECT_EQ(decide_pairs(std::span(slow).first(5), 10).verdict, PairedVerdict::kUndecided);
  EXPECT_EQ(decide_pairs(std::span(slow).first(5), 10).pairs_needed, kMinPairsForInterval);
  // Within +-2%: the head lost less than 10% for sure.
  const std::vector<double> same = {0.01, -0.02, 0.0, 0.015, -0.01, 0.005};
  EXPECT_EQ(decide_pairs(same, 10).verdict, PairedVerdict::kPass);
  // Significantly slower, but by about 5%: under the threshold, a pass.
  const std::vector<double> five = {0.05, 0.045, 0.055, 0.05, 0.06, 0.04};
  EXPECT_EQ(decide_pairs(five, 10).verdict, PairedVerdict::kPass);
  // Too noisy to tell: undecided, and at the cap inconclusive, with the
  // pairs a decision would take.
  const std::vector<double> noisy = {0.3, -0.2, 0.25, -0.1, 0.05, 0.2};
  const PairedDecision open = decide_pairs(noisy, 10);
  EXPECT_EQ(open.verdict, PairedVerdict::kUndecided);
  EXPECT_GT(open.pairs_needed, 6);
  const PairedDecision capped = decide_pairs(noisy, 10, kMinPairsForInterval, true);
  EXPECT_EQ(capped.verdict, PairedVerdict::kInconclusive);
  EXPECT_EQ(capped.pairs_needed, open.pairs_needed);
}

// The gate's operating characteristics at a noise like the CI machines'
// (5% per pair): an identical head rarely fails, a 15% slower one almost
// always does, both within 20 pairs.
TEST(PairedTest, SequentialSamplingHasFewFalseAlarmsAndHighPower) {
  std::mt19937_64 rng(11);
  auto run = [&](double ratio) {
    std::vector<double> v;
    PairedDecision d;
    while (true) {
      v.push_back(pairs(rng, 1, ratio, 0.05)[0]);
      const bool cap = v.size() == 20;
      d = decide_pairs(v, 10, kMinPairsForInterval, cap);
      if (d.verdict != PairedVerdict::kUndecided) return d.verdict;
    }
  };
  int false_alarms = 0, caught = 0;
  for (int t = 0; t < 500; ++t) {
    false_alarms += run(1.0) == PairedVerdict::kRegression;
    caught += run(1.15) == PairedVerdict::kRegression;
  }
  EXPECT_LE(false_alarms, 5);
  EXPECT_GE(caught, 475);
}

TEST(PairedTest, FormatsTheRatioAsTheGatePrintsIt) {
  Interval iv;
  iv.estimate = 1.1534;
  iv.low = 1.1212;
  iv.high = 1.1897;
  EXPECT_EQ(format_ratio(iv), "1.153x [1.12, 1.19]");
  iv.low = iv.high = NAN;
  EXPECT_EQ(format_ratio(iv), "1.153x (one pair: no interval)");
}

}  // namespace
}  // namespace trainscope::analysis
