// Gradient reduction strategies for data parallelism (--reduce).
//
// All work on the flat gradient arena, so a bucket is a contiguous range and
// no packing copy is ever made:
//  * per-tensor: one all-reduce per gradient tensor (MLX docs'
//    tree_map(all_sum)), after backward.
//  * fused: all-reduces over buckets of bucket_bytes (MLX's
//    average_gradients, default 32 MiB; <= 0 means the whole arena at once),
//    after backward.
//  * overlap: the same buckets, cut from the END of the arena, handed during
//    backward, as soon as backward has passed their first element, to a
//    communication thread that all-reduces them in order (PyTorch DDP);
//    finish() waits for it before the optimizer.
//  * overlap-poll: the same, but as nonblocking MPI all-reduces launched and
//    tested by the training thread between kernels; without a progress
//    thread they mostly progress in the final wait (measured, not hidden).
//
// Averaging: the model's loss gradient is scaled by 1 / (predicted tokens in
// the GLOBAL batch), so the all-reduced SUM is already the mean gradient. For
// unmasked batches that equals all_sum / N; with masked padding it is the
// exact global mean; and it saves a pass over the gradients.
//
// Not thread-safe; used by the training loop's thread only (overlap's own
// communication thread is internal, and reports its waits to the watchdog
// itself).
#ifndef TRAINSCOPE_COMM_GRAD_SYNC_H_
#define TRAINSCOPE_COMM_GRAD_SYNC_H_

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "comm/all_reducer.h"
#include "options/choices.h"
#include "comm/communicator.h"
#include "profiler/stall_watchdog.h"
#include "profiler/trace.h"

namespace trainscope::comm {

using options::ReduceStrategy;  // its names: options/choices.h

struct TensorRange {
  int64_t offset = 0;  // elements into the arena
  int64_t numel = 0;
};

// What one step's reduction did on this rank.
struct GradSyncStats {
  int64_t calls = 0;  // collective calls
  int64_t bytes = 0;  // bytes reduced, as sent (AllReducer::wire_bytes: bf16 halves them)
  // Wall time during which a collective of this step was running (overlap:
  // its thread's busy time; overlap-poll: launch to completion as seen).
  double comm_s = 0;
  // The training thread's wall time in communication (finish(), and for
  // overlap-poll also its tests during backward): what backward did not hide.
  double exposed_s = 0;
};

class GradSync {
 public:
  virtual ~GradSync() = default;
  virtual ReduceStrategy strategy() const = 0;
  // Before backward of global step `step`.
  virtual void begin_step(int64_t step) {
    stats_ = {};
    step_ = step;
  }
  // Records one comm-track event per collective (bytes, bucket id) when set.
  void set_trace(profiler::TraceRecorder* recorder);
  // Shows each wait in a collective to the watchdog, labelled with the
  // strategy and the bucket, when set (it must outlive this GradSync).
  void set_watchdog(profiler::StallWatchdog* watchdog);
  // True when on_ready() does anything (the overlapping strategies).
  virtual bool overlaps() const { return false; }
  // From the model's GradReadyHook: gradients [begin, end of arena) are final.
  virtual void on_ready(int64_t begin) {}
  // After backward: every gradient holds the sum over ranks on return.
  virtual void finish() = 0;
  const GradSyncStats& stats() const { return stats_; }
  // The bucket ranges this strategy reduces (tensors for per-tensor).
  virtual std::vector<TensorRange> buckets() const = 0;

 protected:
  // One trace event for bucket `bucket` of `bytes` that ran [start_ns, now).
  void trace_collective(int64_t start_ns, int32_t bucket, int64_t bytes);
  // The calling thread waits on bucket `bucket` until the scope closes.
  [[nodiscard]] profiler::StallWatchdog::Wait watch(int32_t bucket);
  // "all_reduce fused": trace events and watchdog lines call it so.
  std::string collective_name() const;
  virtual std::string_view collective() const { return "all_reduce"; }

  GradSyncStats stats_;
  int64_t step_ = -1;
  profiler::TraceRecorder* trace_ = nullptr;
  uint32_t trace_name_ = 0;
  profiler::StallWatchdog* watchdog_ = nullptr;
  std::string watch_name_;
};

// Reduces reducer.buffer(), the whole gradient arena, with reducer's
// algorithm; tensors: the arena's tensors (forward order, contiguous).
std::unique_ptr<GradSync> make_grad_sync(ReduceStrategy strategy, AllReducer& reducer,
                                         std::vector<TensorRange> tensors, int64_t bucket_bytes);

// The fused strategy's buckets over an arena of `total` floats: at most
// bucket_bytes each (<= 0: one), cut from the end.
std::vector<TensorRange> bucket_ranges(int64_t total, int64_t bucket_bytes);

// ZeRO stage 1: after backward, one reduce-scatter per bucket of
// bucket_ranges(arena, bucket_bytes), so each rank's slice_of(bucket, ranks,
// rank) of every bucket holds the summed gradient (the rest is stale).
// Strategy kFused; its collective is "reduce_scatter".
std::unique_ptr<GradSync> make_reduce_scatter_sync(AllReducer& reducer, int64_t bucket_bytes);

}  // namespace trainscope::comm

#endif  // TRAINSCOPE_COMM_GRAD_SYNC_H_
