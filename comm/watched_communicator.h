// A Communicator that forwards every call to another and shows each
// collective to a stall watchdog while it waits in it (leveldb's EnvWrapper
// pattern): the trainer wraps its communicator once, so every collective of a
// run, setup and the end included, is watched without marking call sites.
// Callers that know more (the gradient reductions: strategy and bucket) open
// their own labelled wait around the call; the wrapper's then records
// nothing (StallWatchdog's waits nest per thread).
//
// Thread-safety: that of the wrapped communicator.
#ifndef TRAINSCOPE_COMM_WATCHED_COMMUNICATOR_H_
#define TRAINSCOPE_COMM_WATCHED_COMMUNICATOR_H_

#include <cstdlib>

#include "comm/communicator.h"
#include "comm/host_group.h"
#include "profiler/stall_watchdog.h"

namespace trainscope::comm {

class WatchedCommunicator final : public Communicator {
 private:
  // Defined before their callers: their return types are deduced.
  template <typename Call>
  auto watched(std::string_view collective, Call&& call) {
    auto wait = watchdog_.wait(collective);
    return call();
  }
  template <typename T>
  void sum(std::span<T> d) {
    watched("all_reduce", [&] { inner_.all_reduce_sum(d); });
  }

 public:
  // Both must outlive this.
  WatchedCommunicator(Communicator& inner, profiler::StallWatchdog& watchdog)
      : inner_(inner), watchdog_(watchdog) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend() const override { return inner_.backend(); }
  std::string host() const override { return inner_.host(); }
  bool serialized_threads() const override { return inner_.serialized_threads(); }

  // The base class's helpers (all_reduce_sum of one value) stay visible.
  using Communicator::all_reduce_sum;
  void barrier() override {
    watched("barrier", [&] { inner_.barrier(); });
  }
  void all_reduce_sum(std::span<float> d) override { sum(d); }
  void all_reduce_sum(std::span<double> d) override { sum(d); }
  void all_reduce_sum(std::span<int64_t> d) override { sum(d); }
  void all_reduce_max(std::span<double> d) override {
    watched("all_reduce max", [&] { inner_.all_reduce_max(d); });
  }
  // The request's wait() is watched; launching and test() are not waits.
  std::unique_ptr<Request> all_reduce_sum_async(std::span<float> data) override;
  void all_reduce_sum_bf16(std::span<uint16_t> d) override {
    watched("all_reduce bf16", [&] { inner_.all_reduce_sum_bf16(d); });
  }
  std::unique_ptr<Request> all_reduce_sum_bf16_async(std::span<uint16_t> data) override;
  void broadcast(std::span<std::byte> d, int root) override {
    watched("broadcast", [&] { inner_.broadcast(d, root); });
  }
  void reduce_scatter_sum(std::span<float> d) override {
    watched("reduce_scatter", [&] { inner_.reduce_scatter_sum(d); });
  }
  void reduce_scatter_sum_bf16(std::span<uint16_t> d) override {
    watched("reduce_scatter bf16", [&] { inner_.reduce_scatter_sum_bf16(d); });
  }
  void all_gather(std::span<float> d) override {
    watched("all_gather", [&] { inner_.all_gather(d); });
  }
  // Setting up a window is collective but short; its waits are not watched.
  std::unique_ptr<HostGroup> host_group(int64_t floats_per_rank, int split) override {
    return inner_.host_group(floats_per_rank, split);
  }
  std::vector<std::string> all_gather(const std::string& record) override {
    return watched("all_gather", [&] { return inner_.all_gather(record); });
  }
  [[noreturn]] void abort(int code) override {
    inner_.abort(code);
    std::_Exit(code);  // not reached: the compiler cannot know an override does not return
  }

 private:
  Communicator& inner_;
  profiler::StallWatchdog& watchdog_;
};

}  // namespace trainscope::comm

#endif  // TRAINSCOPE_COMM_WATCHED_COMMUNICATOR_H_
