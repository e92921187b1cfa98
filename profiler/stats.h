// Summary statistics over timing samples (comparing runs is
// analysis/rank_test.h's).
//
// summarize() turns a series of samples (seconds per step, bytes, ...) into the
// figures every report prints: count, mean, median, sample standard deviation,
// coefficient of variation, min, max and the p50/p95/p99 percentiles.
// SampleSet keeps the samples themselves so that percentiles stay exact after
// merging the sets of several ranks or repetitions; RunningMoments keeps only
// count/mean/M2/min/max when the samples cannot be kept (merge is exact for
// those moments, Chan et al.'s parallel update).
//
// Conventions, chosen once:
//  * Percentiles use linear interpolation between closest ranks (Hyndman & Fan
//    type 7, numpy's default): p(q) = x[h] + (h - floor h)(x[h+1] - x[h]) with
//    h = (n - 1) q over the sorted samples, 0-based. The median equals p50.
//  * Empty input: count 0 and every other field NaN (nothing was measured; a
//    0 would read as "instantaneous").
//  * One sample: stddev 0 and cv 0 (no spread can be observed), as
//    google/benchmark does; every location statistic is the sample itself.
//  * cv = stddev / mean; NaN when mean is 0.
//
// Thread-safety: pure functions; SampleSet and RunningMoments are plain values
// (no internal locking).
#ifndef TRAINSCOPE_PROFILER_STATS_H_
#define TRAINSCOPE_PROFILER_STATS_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace trainscope::profiler {

struct Summary {
  int64_t count = 0;
  double mean = 0;
  double median = 0;
  double stddev = 0;  // sample (n - 1) standard deviation
  double cv = 0;      // stddev / mean
  double min = 0;
  double max = 0;
  double p50 = 0;
  double p95 = 0;
  double p99 = 0;
};

Summary summarize(std::span<const double> samples);

// Type-7 percentile of already sorted samples, q in [0, 1]. NaN when empty.
double percentile_sorted(std::span<const double> sorted, double q);

// A growable set of samples with exact summary and merge.
class SampleSet {
 public:
  void add(double x) { samples_.push_back(x); }
  void merge(const SampleSet& other);
  Summary summary() const { return summarize(samples_); }
  std::span<const double> samples() const { return samples_; }
  int64_t count() const { return static_cast<int64_t>(samples_.size()); }
  void clear() { samples_.clear(); }

 private:
  std::vector<double> samples_;
};

// Streaming mean and variance (Welford) with an exact merge.
class RunningMoments {
 public:
  void add(double x);
  void merge(const RunningMoments& other);
  int64_t count() const { return count_; }
  double mean() const;      // NaN when empty
  double variance() const;  // sample variance; 0 for one sample, NaN when empty
  double stddev() const;
  double min() const;  // NaN when empty
  double max() const;

 private:
  int64_t count_ = 0;
  double mean_ = 0;
  double m2_ = 0;
  double min_ = 0;
  double max_ = 0;
};

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_STATS_H_
