#include "profiler/steady_state.h"

#include <limits>
#include <vector>

namespace trainscope::profiler {

namespace {

constexpr int64_t kBatch = 5;

}  // namespace

int64_t steady_state_start(std::span<const double> samples) {
  const auto m = static_cast<int64_t>(samples.size()) / kBatch;
  if (m < 2) return 0;
  std::vector<double> batch_means(static_cast<std::size_t>(m));
  for (int64_t b = 0; b < m; ++b) {
    double sum = 0;
    for (int64_t i = 0; i < kBatch; ++i) sum += samples[static_cast<std::size_t>(b * kBatch + i)];
    batch_means[static_cast<std::size_t>(b)] = sum / kBatch;
  }
  // Two passes per truncation (m is a run's steps / 5): a constant series
  // gives exactly 0 everywhere, and the first (smallest) d wins ties.
  int64_t best_d = 0;
  double best = std::numeric_limits<double>::infinity();
  for (int64_t d = 0; d <= m / 2; ++d) {
    const auto left = static_cast<double>(m - d);
    double mean = 0;
    for (int64_t b = d; b < m; ++b) mean += batch_means[static_cast<std::size_t>(b)];
    mean /= left;
    double squares = 0;
    for (int64_t b = d; b < m; ++b) {
      const double e = batch_means[static_cast<std::size_t>(b)] - mean;
      squares += e * e;
    }
    const double mser = squares / (left * left);
    if (mser < best) {
      best = mser;
      best_d = d;
    }
  }
  return best_d * kBatch;
}

}  // namespace trainscope::profiler
