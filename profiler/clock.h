// Elapsed wall time on the monotonic clock, for progress lines, timeouts and
// phase timings alike.
#ifndef TRAINSCOPE_PROFILER_CLOCK_H_
#define TRAINSCOPE_PROFILER_CLOCK_H_

#include <time.h>

#include <chrono>

namespace trainscope::profiler {

using Clock = std::chrono::steady_clock;

// Seconds from `start` to now.
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// CPU seconds (user and system, every thread) this process has used.
inline double process_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_CLOCK_H_
