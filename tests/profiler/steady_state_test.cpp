#include "profiler/steady_state.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace trainscope::profiler {
namespace {

// Deterministic noise in [-amplitude, amplitude].
std::vector<double> noisy(int n, double level, double amplitude, unsigned seed = 1) {
  std::vector<double> x;
  unsigned s = seed;
  for (int i = 0; i < n; ++i) {
    s = s * 1103515245u + 12345u;
    const double u = static_cast<double>((s >> 8) & 0xffff) / 65535.0;  // [0, 1]
    x.push_back(level + amplitude * (2 * u - 1));
  }
  return x;
}

TEST(SteadyStateTest, ASlowStartIsCutAtTheBatchWhereItEnds) {
  // 10 steps at 3x, then 50 steady ones within +-2%: the slow start goes,
  // and with it at most the two steady batches nearest it (MSER also drops
  // a batch whose noise lies far from the rest: here the fourth, +1.3%).
  std::vector<double> x(10, 3.0);
  const auto steady = noisy(50, 1.0, 0.02);
  x.insert(x.end(), steady.begin(), steady.end());
  EXPECT_GE(steady_state_start(x), 10);
  EXPECT_LE(steady_state_start(x), 20);
  // Without noise, exactly the slow start.
  std::vector<double> clean(10, 3.0);
  clean.resize(60, 1.0);
  EXPECT_EQ(steady_state_start(clean), 10);
}

TEST(SteadyStateTest, AGradualWarmUpIsCutWhereItFlattens) {
  // Decays from 2x towards 1 with time constant 4 steps: within 1% of 1 (the
  // noise) after ~18 steps.
  std::vector<double> x = noisy(80, 1.0, 0.01);
  for (int i = 0; i < 80; ++i) x[i] += std::exp(-i / 4.0);
  const int64_t start = steady_state_start(x);
  EXPECT_GE(start, 10);
  EXPECT_LE(start, 25);
}

TEST(SteadyStateTest, ASteadyOrShortSeriesKeepsEveryStep) {
  EXPECT_EQ(steady_state_start(std::vector<double>(40, 0.5)), 0);
  EXPECT_EQ(steady_state_start(std::vector<double>{9, 1, 1, 1, 1, 1, 1, 1, 1}), 0);  // < 2 batches
  EXPECT_EQ(steady_state_start({}), 0);
}

TEST(SteadyStateTest, NeverCutsMoreThanHalf) {
  // Rising all the way: no steady state; half is kept.
  std::vector<double> x;
  for (int i = 0; i < 40; ++i) x.push_back(1.0 + i * 0.1);
  EXPECT_LE(steady_state_start(x), 20);
}

}  // namespace
}  // namespace trainscope::profiler
