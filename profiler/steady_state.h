// Where a run's warm-up ends: the first step from which its step times are
// steady. A fixed warm-up count is a guess that is too short for a model
// whose first steps fault in pages and fill caches for longer, and too long
// for one already steady; the trainer therefore leaves out of its timing
// statistics the larger of --warmup-steps and the start this module finds
// (the run's summary records it: RunSummary::warmup_steps).
//
// The rule is MSER-5 (White 1997; White, Cobb & Spratt 2000; compared with
// 42 other methods by Hoad, Robinson & Davies 2010, who recommend it): the
// series is cut into batches of 5 steps, and the truncation d (in batches)
// minimises the squared standard error of the mean of what is left,
//   MSER(d) = sum_{i>d} (Z_i - mean_{>d})^2 / (m - d)^2,
// over d <= m / 2 (a minimum in the second half says the series never
// settled, and half is kept whatever it says). It needs no parameter and
// assumes no distribution.
//
// Thread-safety: pure function.
#ifndef TRAINSCOPE_PROFILER_STEADY_STATE_H_
#define TRAINSCOPE_PROFILER_STEADY_STATE_H_

#include <cstdint>
#include <span>

namespace trainscope::profiler {

// The number of leading samples MSER-5 truncates: a multiple of 5, at most
// half of the samples; 0 with fewer than two batches (10 samples).
int64_t steady_state_start(std::span<const double> samples);

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_STEADY_STATE_H_
