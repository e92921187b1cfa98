#include "comm/grad_sync.h"

#include <algorithm>
#include <chrono>

#include "kernels/check.h"

namespace trainscope::comm {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

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

void GradSync::set_trace(profiler::TraceRecorder* recorder) {
  trace_ = recorder;
  if (trace_ != nullptr) {
    trace_name_ = trace_->intern(std::string("all_reduce ") +
                                 std::string(reduce_strategy_name(strategy())));
  }
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
  BlockingSync(ReduceStrategy strategy, Communicator& comm, std::span<float> grads,
               std::vector<TensorRange> ranges)
      : strategy_(strategy), comm_(comm), grads_(grads), ranges_(std::move(ranges)) {}
  ReduceStrategy strategy() const override { return strategy_; }
  void finish() override {
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < ranges_.size(); ++i) {
      const TensorRange& r = ranges_[i];
      const int64_t start = profiler::trace_clock_ns();
      comm_.all_reduce_sum(grads_.subspan(r.offset, r.numel));
      stats_.calls += 1;
      stats_.bytes += r.numel * static_cast<int64_t>(sizeof(float));
      trace_collective(start, static_cast<int32_t>(i), r.numel * 4);
    }
    stats_.comm_s = stats_.exposed_s = seconds_since(t0);
  }
  std::vector<TensorRange> buckets() const override { return ranges_; }

 private:
  ReduceStrategy strategy_;
  Communicator& comm_;
  std::span<float> grads_;
  std::vector<TensorRange> ranges_;
};

class OverlapSync final : public GradSync {
 public:
  OverlapSync(Communicator& comm, std::span<float> grads, int64_t bucket_elems)
      : comm_(comm), grads_(grads),
        buckets_(buckets_from_end(static_cast<int64_t>(grads.size()), bucket_elems)) {
    requests_.resize(buckets_.size());
    launched_ns_.resize(buckets_.size());
  }
  ReduceStrategy strategy() const override { return ReduceStrategy::kOverlap; }
  void begin_step(int64_t step) override {
    GradSync::begin_step(step);
    next_ = 0;
  }
  void on_ready(int64_t begin) override {
    const auto t0 = Clock::now();
    // Progress what is in flight, then launch every bucket now complete.
    for (std::size_t i = 0; i < next_; ++i) {
      if (requests_[i] && requests_[i]->test()) complete(i);
    }
    while (next_ < buckets_.size() && buckets_[next_].offset >= begin) launch(next_++);
    stats_.comm_s += seconds_since(t0);
  }
  void finish() override {
    const auto t0 = Clock::now();
    while (next_ < buckets_.size()) launch(next_++);
    for (std::size_t i = 0; i < requests_.size(); ++i) {
      if (requests_[i]) {
        requests_[i]->wait();
        complete(i);
      }
    }
    const double waited = seconds_since(t0);
    stats_.exposed_s = waited;
    stats_.comm_s += waited;
  }
  std::vector<TensorRange> buckets() const override { return buckets_; }

 private:
  void complete(std::size_t i) {
    requests_[i].reset();
    trace_collective(launched_ns_[i], static_cast<int32_t>(i), buckets_[i].numel * 4);
  }
  void launch(std::size_t i) {
    const TensorRange& b = buckets_[i];
    launched_ns_[i] = profiler::trace_clock_ns();
    requests_[i] = comm_.all_reduce_sum_async(grads_.subspan(b.offset, b.numel));
    stats_.calls += 1;
    stats_.bytes += b.numel * static_cast<int64_t>(sizeof(float));
  }

  Communicator& comm_;
  std::span<float> grads_;
  std::vector<TensorRange> buckets_;
  std::vector<std::unique_ptr<Request>> requests_;
  std::vector<int64_t> launched_ns_;
  std::size_t next_ = 0;
};

}  // namespace

ReduceStrategy parse_reduce_strategy(std::string_view name) {
  if (name == "per-tensor") return ReduceStrategy::kPerTensor;
  if (name == "fused") return ReduceStrategy::kFused;
  if (name == "overlap") return ReduceStrategy::kOverlap;
  throw Error("--reduce: unknown strategy '" + std::string(name) +
              "' (expected per-tensor, fused or overlap)");
}

std::string_view reduce_strategy_name(ReduceStrategy s) {
  switch (s) {
    case ReduceStrategy::kPerTensor: return "per-tensor";
    case ReduceStrategy::kFused: return "fused";
    case ReduceStrategy::kOverlap: return "overlap";
  }
  return "?";
}

std::unique_ptr<GradSync> make_grad_sync(ReduceStrategy strategy, Communicator& comm,
                                         std::span<float> grads,
                                         std::vector<TensorRange> tensors, int64_t bucket_bytes) {
  const int64_t bucket_elems = bucket_bytes <= 0 ? 0 : std::max<int64_t>(1, bucket_bytes / 4);
  switch (strategy) {
    case ReduceStrategy::kPerTensor:
      return std::make_unique<BlockingSync>(strategy, comm, grads, std::move(tensors));
    case ReduceStrategy::kFused:
      return std::make_unique<BlockingSync>(
          strategy, comm, grads,
          buckets_from_end(static_cast<int64_t>(grads.size()), bucket_elems));
    case ReduceStrategy::kOverlap:
      return std::make_unique<OverlapSync>(comm, grads, bucket_elems);
  }
  TS_CHECK(false) << "unhandled strategy";
  return nullptr;
}

}  // namespace trainscope::comm
