#include "comm/grad_sync.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/check.h"
#include "profiler/clock.h"

namespace trainscope::comm {
namespace {

using profiler::Clock;
using profiler::seconds_since;

// Buckets of at most bucket_elems, cut from the end of [0, total) so the last
// layers' gradients (final first during backward) fill the first bucket.
std::vector<TensorRange> buckets_from_end(int64_t total, int64_t bucket_elems) {
  std::vector<TensorRange> out;
  if (bucket_elems <= 0) bucket_elems = total;
  for (int64_t end = total; end > 0;) {
    const int64_t begin = std::max<int64_t>(0, end - bucket_elems);
    out.push_back({begin, end - begin});
    end = begin;
  }
  return out;
}

}  // namespace

std::string GradSync::collective_name() const {
  return fmt::format("{} {}", collective(), enum_name(strategy()));
}

void GradSync::set_trace(profiler::TraceRecorder* recorder) {
  trace_ = recorder;
  if (trace_ != nullptr) trace_name_ = trace_->intern(collective_name());
}

void GradSync::set_watchdog(profiler::StallWatchdog* watchdog) {
  watchdog_ = watchdog;
  watch_name_ = collective_name();
}

profiler::StallWatchdog::Wait GradSync::watch(int32_t bucket) {
  if (watchdog_ == nullptr) return {};
  return watchdog_->wait(watch_name_, bucket);
}

void GradSync::trace_collective(int64_t start_ns, int32_t bucket, int64_t bytes) {
  if (trace_ == nullptr) return;
  trace_->record(trace_name_, profiler::Track::kComm, start_ns,
                 profiler::trace_clock_ns() - start_ns, step_, {bytes, bucket});
}

namespace {

// per-tensor and fused: blocking all-reduces over a list of ranges after
// backward; they differ only in the ranges (tensors vs buckets).
class BlockingSync final : public GradSync {
 public:
  BlockingSync(ReduceStrategy strategy, AllReducer& reducer, std::vector<TensorRange> ranges,
               bool scatter = false)
      : strategy_(strategy), reducer_(reducer), ranges_(std::move(ranges)), scatter_(scatter) {}
  ReduceStrategy strategy() const override { return strategy_; }
  std::string_view collective() const override {
    return scatter_ ? "reduce_scatter" : "all_reduce";
  }
  void finish() override {
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < ranges_.size(); ++i) {
      const TensorRange& r = ranges_[i];
      const int64_t start = profiler::trace_clock_ns();
      {
        auto wait = watch(static_cast<int32_t>(i));
        if (scatter_) {
          reducer_.reduce_scatter(r.offset, r.numel);
        } else {
          reducer_.sum(r.offset, r.numel);
        }
      }
      stats_.calls += 1;
      stats_.bytes += reducer_.wire_bytes(r.numel);
      trace_collective(start, static_cast<int32_t>(i), reducer_.wire_bytes(r.numel));
    }
    stats_.comm_s = stats_.exposed_s = seconds_since(t0);
  }
  std::vector<TensorRange> buckets() const override { return ranges_; }

 private:
  ReduceStrategy strategy_;
  AllReducer& reducer_;
  std::vector<TensorRange> ranges_;
  bool scatter_;  // reduce-scatter each range (ZeRO) instead of all-reducing it
};

// overlap: PyTorch DDP's design. Backward hands each finished bucket to one
// communication thread that runs blocking all-reduces in bucket order, so
// the transfer progresses while backward computes. (MPI progresses a
// nonblocking collective only inside MPI calls, which the training thread
// makes only between kernels: see PollOverlapSync.) The training thread
// makes no MPI call between begin_step() and the end of finish(), so the
// calls are serialized as MPI_THREAD_SERIALIZED requires.
class ThreadOverlapSync final : public GradSync {
 public:
  ThreadOverlapSync(AllReducer& reducer, std::vector<TensorRange> buckets)
      : reducer_(reducer),
        grads_(reducer.buffer()),
        buckets_(std::move(buckets)),
        start_ns_(buckets_.size()),
        end_ns_(buckets_.size()) {
    worker_ = std::thread([this] { work(); });
  }
  ~ThreadOverlapSync() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    changed_.notify_all();
    worker_.join();
  }
  ReduceStrategy strategy() const override { return ReduceStrategy::kOverlap; }
  bool overlaps() const override { return true; }
  void begin_step(int64_t step) override {
    GradSync::begin_step(step);
    std::lock_guard lock(mu_);
    TS_CHECK(handed_ == done_) << "begin_step with buckets of the last step in flight";
    handed_ = done_ = 0;
    handing_s_ = 0;
  }
  void on_ready(int64_t begin) override {
    std::size_t n = handed_snapshot_;
    while (n < buckets_.size() && buckets_[n].offset >= begin) ++n;
    if (n == handed_snapshot_) return;
    const auto t0 = Clock::now();
    hand_over(n);
    handing_s_ += seconds_since(t0);
  }
  void finish() override {
    const auto t0 = Clock::now();
    if (handed_snapshot_ < buckets_.size()) hand_over(buckets_.size());
    {
      std::unique_lock lock(mu_);
      auto wait = watch(static_cast<int32_t>(done_));
      changed_.wait(lock, [&] { return done_ == buckets_.size(); });
      handed_snapshot_ = 0;
      if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    }
    stats_.exposed_s = handing_s_ + seconds_since(t0);
    handing_s_ = 0;
    stats_.calls = static_cast<int64_t>(buckets_.size());
    stats_.bytes = reducer_.wire_bytes(static_cast<int64_t>(grads_.size()));
    stats_.comm_s = 0;
    for (std::size_t i = 0; i < buckets_.size(); ++i) {
      stats_.comm_s += static_cast<double>(end_ns_[i] - start_ns_[i]) * 1e-9;
      // Recorded here: the trace recorder belongs to the training thread.
      if (trace_ != nullptr) {
        trace_->record(trace_name_, profiler::Track::kComm, start_ns_[i], end_ns_[i] - start_ns_[i],
                       step_, {reducer_.wire_bytes(buckets_[i].numel), static_cast<int32_t>(i)});
      }
    }
  }
  std::vector<TensorRange> buckets() const override { return buckets_; }

 private:
  // Buckets [0, n) may now be reduced.
  void hand_over(std::size_t n) {
    {
      std::lock_guard lock(mu_);
      handed_ = n;
    }
    handed_snapshot_ = n;
    changed_.notify_all();
  }
  void work() {
    std::unique_lock lock(mu_);
    while (true) {
      changed_.wait(lock, [&] { return stop_ || done_ < handed_; });
      if (stop_) return;
      const std::size_t i = done_;
      // After a failure the rest of the step's buckets are only counted off.
      const bool skip = error_ != nullptr;
      lock.unlock();
      std::exception_ptr failed;
      start_ns_[i] = profiler::trace_clock_ns();
      try {
        auto wait = watch(static_cast<int32_t>(i));
        if (!skip) reducer_.sum(buckets_[i].offset, buckets_[i].numel);
      } catch (...) {
        failed = std::current_exception();
      }
      end_ns_[i] = profiler::trace_clock_ns();
      lock.lock();
      if (failed) error_ = failed;
      ++done_;
      changed_.notify_all();
    }
  }

  AllReducer& reducer_;
  std::span<float> grads_;
  std::vector<TensorRange> buckets_;
  // Written by the worker for bucket i before done_ passes i; read after.
  std::vector<int64_t> start_ns_, end_ns_;
  std::size_t handed_snapshot_ = 0;  // the training thread's copy of handed_
  double handing_s_ = 0;             // this step's time in on_ready()

  std::mutex mu_;
  std::condition_variable changed_;
  std::size_t handed_ = 0;  // buckets [0, handed_) may be reduced
  std::size_t done_ = 0;    // buckets [0, done_) are reduced
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread worker_;  // last: starts after everything it touches exists
};

// overlap-poll: the same buckets as nonblocking all-reduces launched during
// backward and tested at every later gradient-ready point. Without a
// progress thread, most of the transfer happens in the final wait: kept to
// measure exactly that.
class PollOverlapSync final : public GradSync {
 public:
  PollOverlapSync(AllReducer& reducer, std::vector<TensorRange> buckets)
      : reducer_(reducer), buckets_(std::move(buckets)) {
    requests_.resize(buckets_.size());
    launched_ns_.resize(buckets_.size());
    completed_ns_.resize(buckets_.size());
  }
  ReduceStrategy strategy() const override { return ReduceStrategy::kOverlapPoll; }
  bool overlaps() const override { return true; }
  void begin_step(int64_t step) override {
    GradSync::begin_step(step);
    next_ = 0;
    in_calls_s_ = 0;
  }
  void on_ready(int64_t begin) override {
    const auto t0 = Clock::now();
    // Progress what is in flight, then launch every bucket now complete.
    for (std::size_t i = 0; i < next_; ++i) {
      if (requests_[i] && requests_[i]->test()) complete(i);
    }
    while (next_ < buckets_.size() && buckets_[next_].offset >= begin) launch(next_++);
    in_calls_s_ += seconds_since(t0);
  }
  void finish() override {
    const auto t0 = Clock::now();
    while (next_ < buckets_.size()) launch(next_++);
    for (std::size_t i = 0; i < requests_.size(); ++i) {
      if (requests_[i]) {
        auto wait = watch(static_cast<int32_t>(i));
        requests_[i]->wait();
        complete(i);
      }
    }
    // Exposed: all the training thread's time in MPI calls, testing during
    // backward included (it is not computing then). Comm: the wall time
    // during which some bucket was in flight (completion as first seen).
    stats_.exposed_s = in_calls_s_ + seconds_since(t0);
    in_calls_s_ = 0;
    int64_t busy_ns = 0, covered_to = INT64_MIN;
    for (std::size_t i = 0; i < buckets_.size(); ++i) {  // launched in order
      const int64_t from = std::max(launched_ns_[i], covered_to);
      if (completed_ns_[i] > from) busy_ns += completed_ns_[i] - from;
      covered_to = std::max(covered_to, completed_ns_[i]);
    }
    stats_.comm_s = static_cast<double>(busy_ns) * 1e-9;
  }
  std::vector<TensorRange> buckets() const override { return buckets_; }

 private:
  void complete(std::size_t i) {
    requests_[i].reset();
    completed_ns_[i] = profiler::trace_clock_ns();
    trace_collective(launched_ns_[i], static_cast<int32_t>(i),
                     reducer_.wire_bytes(buckets_[i].numel));
  }
  void launch(std::size_t i) {
    const TensorRange& b = buckets_[i];
    launched_ns_[i] = profiler::trace_clock_ns();
    requests_[i] = reducer_.sum_async(b.offset, b.numel);
    stats_.calls += 1;
    stats_.bytes += reducer_.wire_bytes(b.numel);
  }

  AllReducer& reducer_;
  std::vector<TensorRange> buckets_;
  std::vector<std::unique_ptr<Request>> requests_;
  std::vector<int64_t> launched_ns_, completed_ns_;
  std::size_t next_ = 0;
  double in_calls_s_ = 0;  // this step's time in on_ready()
};

}  // namespace

std::unique_ptr<GradSync> make_grad_sync(ReduceStrategy strategy, AllReducer& reducer,
                                         std::vector<TensorRange> tensors, int64_t bucket_bytes) {
  std::vector<TensorRange> buckets =
      bucket_ranges(static_cast<int64_t>(reducer.buffer().size()), bucket_bytes);
  switch (strategy) {
    case ReduceStrategy::kPerTensor:
      return std::make_unique<BlockingSync>(strategy, reducer, std::move(tensors));
    case ReduceStrategy::kFused:
      return std::make_unique<BlockingSync>(strategy, reducer, std::move(buckets));
    case ReduceStrategy::kOverlap:
    case ReduceStrategy::kOverlapPoll:
      // One rank has nothing to overlap: the same buckets, blocking (and no
      // thread, no calls during backward).
      if (reducer.comm().size() == 1) {
        return std::make_unique<BlockingSync>(strategy, reducer, std::move(buckets));
      }
      if (strategy == ReduceStrategy::kOverlapPoll) {
        return std::make_unique<PollOverlapSync>(reducer, std::move(buckets));
      }
      if (!reducer.comm().serialized_threads()) {
        throw Error(
            "--reduce overlap: the MPI library does not provide MPI_THREAD_SERIALIZED, "
            "which its communication thread needs; use --reduce overlap-poll");
      }
      return std::make_unique<ThreadOverlapSync>(reducer, std::move(buckets));
  }
  TS_CHECK(false) << "unhandled strategy";
  return nullptr;
}

std::vector<TensorRange> bucket_ranges(int64_t total, int64_t bucket_bytes) {
  return buckets_from_end(total, bucket_bytes <= 0 ? 0 : std::max<int64_t>(1, bucket_bytes / 4));
}

std::unique_ptr<GradSync> make_reduce_scatter_sync(AllReducer& reducer, int64_t bucket_bytes) {
  const auto total = static_cast<int64_t>(reducer.buffer().size());
  return std::make_unique<BlockingSync>(ReduceStrategy::kFused, reducer,
                                        bucket_ranges(total, bucket_bytes), /*scatter=*/true);
}

}  // namespace trainscope::comm
