// The memory-copy probe: the rate at which this process can memcpy a buffer
// much larger than the caches, the yardstick memory-bound work is held
// against (the shared-memory all-reduce in suites/allreduce_bench.h,
// token-by-token generation in bench/generate_bench.cpp). One module, so
// both measure the same way.
//
// Thread-safety: call from one thread at a time; with threads > 1 it runs
// its own OpenMP team.
#ifndef TRAINSCOPE_PROFILER_COPY_PROBE_H_
#define TRAINSCOPE_PROFILER_COPY_PROBE_H_

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "kernels/storage.h"

namespace trainscope::profiler {

struct CopyProbeOptions {
  int64_t bytes = 0;  // copied per repetition (at least 1)
  int reps = 5;       // timed copies
  // OpenMP threads copying contiguous shares at the same moment: the
  // bandwidth a computation on that many threads can draw.
  int threads = 1;
  // Where the memory tracker counts the two buffers (2 x bytes).
  kernels::MemoryCategory category = kernels::MemoryCategory::kWorkspace;
};

// Seconds of each repetition's memcpy between two buffers allocated once
// (their pages already faulted in). `before_each`, if set, runs before each
// copy outside the timing: a barrier, so that every rank copies at once.
std::vector<double> time_copies(const CopyProbeOptions& options,
                                const std::function<void()>& before_each = {});

// `bytes` / the median of `seconds`, in GB/s (1e9 B/s): bytes COPIED, each of
// which a memcpy reads once and writes once (the traffic is twice this).
// 0 when there are no samples or the median is not positive.
double copy_gbps(int64_t bytes, std::span<const double> seconds);

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_COPY_PROBE_H_
