// Replayed compute (--replay-compute FILE): the compute of a measured
// one-rank run, waited out as sleeps, so that N ranks on a machine of fewer
// cores do the real gradient synchronisation of N hosts (the same buckets,
// bytes, algorithm and overlap schedule) with the compute of a whole host
// each. What the time-dilated cluster could not do on shared vCPUs
// (docs/METRICS.md): sleeping takes no CPU, so 8 ranks fit on 2 cores.
//
// FILE is that run's summary (trainscope train --summary). Its measured steps
// (after its warm-up) are the pool: in step k, rank r replays the pool's step
// drawn by a fixed hash of (r, k), so ranks differ step to step as real
// hosts do and wait for the slowest as they would. A summary of several
// ranks gives each rank the pool of its namesake (rank r mod theirs): a
// replay of a real multi-host run, which checks the replay itself. A replayed step sleeps the
// step's data, forward, backward and optimizer times; during backward it
// hands each gradient range to the reduction at the moment the measured
// backward finalised it (StepRecord::backward_ready_s), so overlap starts
// each bucket when it did. The loss and gradient norm are the recorded ones;
// nothing is computed and the weights stay as they were.
//
// Thread-safety: read-only after load.
#ifndef TRAINSCOPE_TRAINING_RUN_REPLAY_H_
#define TRAINSCOPE_TRAINING_RUN_REPLAY_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace trainscope::training {

struct ReplayedStep {
  double data_s = 0, forward_s = 0, backward_s = 0, optimizer_s = 0;
  // Of backward_s: the head's gradient GEMMs, run in forward's pass (0 in
  // summaries from before they were booked to backward).
  double head_backward_s = 0;
  double loss = 0, grad_norm = 0;
  std::vector<double> ready_s;    // seconds into backward
  std::vector<int64_t> ready_at;  // where each finalised range begins, elements
};

class ComputeReplay {
 public:
  // Reads `path` for rank `rank`. Throws Error naming it when it is no
  // summary, holds no measured steps with backward's moments, or its
  // gradient ranges do not fit an arena of `trainable` elements (another
  // model). Every duration is multiplied by `time_scale` (>= 1).
  static ComputeReplay load(const std::string& path, int64_t trainable, int rank,
                            double time_scale = 1);

  // What rank `rank` replays in step `step`.
  const ReplayedStep& step_for(int rank, int64_t step) const;
  std::size_t size() const { return steps_.size(); }

 private:
  std::vector<ReplayedStep> steps_;
};

// The replay's timeline of one stretch of compute: each wait sleeps until
// the planned end of its phase, counted from where the last phase was
// planned to end, not from when its sleep returned. A sleep wakes late on a
// busy machine (a few ms at a load of 10 on 2 cores), and 30 waits a step
// (a phase or gradient range each) came to twice the measured compute;
// planned ends keep the lateness from adding up (no CPU; at once if that
// has passed).
class ReplayClock {
 public:
  // A new stretch, planned from now (after a collective, whose time is real).
  void restart() { planned_ = std::chrono::steady_clock::now(); }
  // Sleeps until `seconds` after the planned end of the last wait.
  void wait(double seconds);
  // The thread spent `seconds` on work the measured run never did between
  // two of its waits (a bucket's reduction started inside backward): the
  // rest of the stretch moves later by as much, as real compute would.
  void defer(double seconds);
  std::chrono::steady_clock::time_point planned() const { return planned_; }

 private:
  std::chrono::steady_clock::time_point planned_ = std::chrono::steady_clock::now();
};

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_RUN_REPLAY_H_
