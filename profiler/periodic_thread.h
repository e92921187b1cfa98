// A thread that does one thing at a fixed interval until it is stopped: the
// stall watchdog's checks and the trace stream's flushes.
//
// Thread-safety: stop() and the destructor may be called from any thread but
// the periodic one; `tick` runs on the periodic thread only.
#ifndef TRAINSCOPE_PROFILER_PERIODIC_THREAD_H_
#define TRAINSCOPE_PROFILER_PERIODIC_THREAD_H_

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace trainscope::profiler {

class PeriodicThread {
 public:
  // Starts the thread: `tick` runs every `interval_s` (first after one
  // interval) until it returns false or stop() is called.
  PeriodicThread(double interval_s, std::function<bool()> tick);
  // stop()
  ~PeriodicThread();
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

  // No tick starts after this returns, and the one running has ended.
  void stop();

 private:
  void run();

  const double interval_s_;
  const std::function<bool()> tick_;
  std::mutex mu_;
  std::condition_variable stopped_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after everything it reads exists
};

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_PERIODIC_THREAD_H_
