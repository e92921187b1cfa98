// Pettitt's change-point test on series with planted changes (and none).
#include "analysis/change_point.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace trainscope::analysis {
namespace {

std::vector<double> noisy_steps(std::mt19937_64& rng,
                                const std::vector<std::pair<int, double>>& levels) {
  std::normal_distribution<double> d(0, 1);
  std::vector<double> x;
  for (auto [count, level] : levels)
    for (int i = 0; i < count; ++i) x.push_back(level + d(rng));
  return x;
}

// Five low values then five high: every pair across the split disagrees,
// K = 25 and p = 2 exp(-6 * 625 / (1000 + 100)) by the paper's formula.
TEST(ChangePointTest, SeparatedHalvesGiveThePapersStatistic) {
  const std::vector<double> x{1, 2, 3, 4, 5, 11, 12, 13, 14, 15};
  const ChangePoint cp = pettitt_test(x);
  EXPECT_EQ(cp.index, 5u);
  EXPECT_DOUBLE_EQ(cp.statistic, 25);
  EXPECT_NEAR(cp.p_value, 2 * std::exp(-6.0 * 625 / 1100), 1e-12);
  EXPECT_DOUBLE_EQ(cp.median_before, 3);
  EXPECT_DOUBLE_EQ(cp.median_after, 13);
}

TEST(ChangePointTest, FindsAPlantedShift) {
  std::mt19937_64 rng(41);
  int found = 0;
  for (int trial = 0; trial < 50; ++trial) {
    const auto x = noisy_steps(rng, {{30, 0.0}, {30, 1.5}});
    const ChangePoint cp = pettitt_test(x);
    found += cp.p_value < 0.01 && cp.index >= 27 && cp.index <= 33;
  }
  EXPECT_GE(found, 45);
}

// Under no change the approximation is conservative: at most about alpha.
TEST(ChangePointTest, StationarySeriesRarelyChange) {
  std::mt19937_64 rng(43);
  int false_alarms = 0;
  const int trials = 400;
  for (int trial = 0; trial < trials; ++trial) {
    false_alarms += pettitt_test(noisy_steps(rng, {{30, 0.0}})).p_value < 0.05;
  }
  EXPECT_LE(false_alarms, 0.07 * trials);
}

TEST(ChangePointTest, SegmentationFindsEachOfSeveralChanges) {
  std::mt19937_64 rng(47);
  const auto x = noisy_steps(rng, {{20, 0.0}, {20, 4.0}, {20, 1.0}});
  const auto changes = find_change_points(x);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_NEAR(static_cast<double>(changes[0].index), 20, 1);
  EXPECT_NEAR(static_cast<double>(changes[1].index), 40, 1);
  EXPECT_GT(changes[0].median_after, changes[0].median_before);
  EXPECT_LT(changes[1].median_after, changes[1].median_before);
  EXPECT_TRUE(find_change_points(std::vector<double>{1.0}).empty());
}

}  // namespace
}  // namespace trainscope::analysis
