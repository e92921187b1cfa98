#include "profiler/periodic_thread.h"

#include <chrono>

namespace trainscope::profiler {

PeriodicThread::PeriodicThread(double interval_s, std::function<bool()> tick)
    : interval_s_(interval_s), tick_(std::move(tick)), thread_([this] { run(); }) {}

PeriodicThread::~PeriodicThread() { stop(); }

void PeriodicThread::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  stopped_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PeriodicThread::run() {
  const auto interval = std::chrono::duration<double>(interval_s_);
  std::unique_lock lock(mu_);
  while (!stopped_.wait_for(lock, interval, [&] { return stop_; })) {
    lock.unlock();
    const bool again = tick_();
    lock.lock();
    if (!again) return;
  }
}

}  // namespace trainscope::profiler
