// Elapsed wall time on the monotonic clock, for progress lines, timeouts and
// phase timings alike.
#ifndef TRAINSCOPE_PROFILER_CLOCK_H_
#define TRAINSCOPE_PROFILER_CLOCK_H_

#include <chrono>

namespace trainscope::profiler {

using Clock = std::chrono::steady_clock;

// Seconds from `start` to now.
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_CLOCK_H_
