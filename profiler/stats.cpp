#include "profiler/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace trainscope::profiler {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

double percentile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return kNaN;
  q = std::clamp(q, 0.0, 1.0);
  const double h = static_cast<double>(sorted.size() - 1) * q;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

Summary summarize(std::span<const double> samples) {
  Summary s;
  s.count = static_cast<int64_t>(samples.size());
  if (samples.empty()) {
    s.mean = s.median = s.stddev = s.cv = s.min = s.max = s.p50 = s.p95 = s.p99 = kNaN;
    return s;
  }
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  // Two passes: the mean first, then squared deviations from it. Summing
  // offsets from the minimum keeps a constant series exact (mean = the value,
  // stddev = 0) and large common offsets (timestamps) from eating precision.
  const double base = sorted.front();
  double shifted_sum = 0;
  for (double x : sorted) shifted_sum += x - base;
  s.mean = base + shifted_sum / static_cast<double>(s.count);
  double m2 = 0;
  for (double x : sorted) m2 += (x - s.mean) * (x - s.mean);
  s.stddev = s.count > 1 ? std::sqrt(m2 / static_cast<double>(s.count - 1)) : 0.0;
  s.cv = s.mean != 0 ? s.stddev / s.mean : kNaN;
  s.min = sorted.front();
  s.max = sorted.back();
  s.p50 = percentile_sorted(sorted, 0.50);
  s.median = s.p50;
  s.p95 = percentile_sorted(sorted, 0.95);
  s.p99 = percentile_sorted(sorted, 0.99);
  return s;
}

void SampleSet::merge(const SampleSet& other) {
  samples_.insert(samples_.end(), other.samples_.begin(), other.samples_.end());
}

void RunningMoments::add(double x) {
  if (count_ == 0) {
    min_ = max_ = x;
  } else {
    min_ = std::min(min_, x);
    max_ = std::max(max_, x);
  }
  ++count_;
  const double delta = x - mean_;
  mean_ += delta / static_cast<double>(count_);
  m2_ += delta * (x - mean_);
}

void RunningMoments::merge(const RunningMoments& other) {
  if (other.count_ == 0) return;
  if (count_ == 0) {
    *this = other;
    return;
  }
  const double n_a = static_cast<double>(count_);
  const double n_b = static_cast<double>(other.count_);
  const double n = n_a + n_b;
  const double delta = other.mean_ - mean_;
  mean_ += delta * n_b / n;
  m2_ += other.m2_ + delta * delta * n_a * n_b / n;
  count_ += other.count_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

double RunningMoments::mean() const { return count_ == 0 ? kNaN : mean_; }
double RunningMoments::variance() const {
  if (count_ == 0) return kNaN;
  return count_ == 1 ? 0.0 : m2_ / static_cast<double>(count_ - 1);
}
double RunningMoments::stddev() const { return std::sqrt(variance()); }
double RunningMoments::min() const { return count_ == 0 ? kNaN : min_; }
double RunningMoments::max() const { return count_ == 0 ? kNaN : max_; }

}  // namespace trainscope::profiler
