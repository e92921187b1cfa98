#include "comm/watched_communicator.h"

namespace trainscope::comm {
namespace {

class WatchedRequest final : public Request {
 public:
  WatchedRequest(std::unique_ptr<Request> inner, profiler::StallWatchdog& watchdog)
      : inner_(std::move(inner)), watchdog_(watchdog) {}
  ~WatchedRequest() override {
    auto watch = watchdog_.wait("all_reduce (nonblocking)");
    inner_.reset();  // waits if unfinished
  }
  bool test() override { return inner_->test(); }
  void wait() override {
    auto watch = watchdog_.wait("all_reduce (nonblocking)");
    inner_->wait();
  }

 private:
  std::unique_ptr<Request> inner_;
  profiler::StallWatchdog& watchdog_;
};

}  // namespace

std::unique_ptr<Request> WatchedCommunicator::all_reduce_sum_async(std::span<float> data) {
  return std::make_unique<WatchedRequest>(inner_.all_reduce_sum_async(data), watchdog_);
}

std::unique_ptr<Request> WatchedCommunicator::all_reduce_sum_bf16_async(std::span<uint16_t> data) {
  return std::make_unique<WatchedRequest>(inner_.all_reduce_sum_bf16_async(data), watchdog_);
}

}  // namespace trainscope::comm
