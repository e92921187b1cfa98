// The training loop: optimizer steps from the start step (a resumed run's) to
// --steps. A step loads this rank's rows of the global batch, runs forward and
// backward with the gradients summed over the ranks by --reduce (during
// backward when the strategy overlaps), clips and applies AdamW (with --zero 1
// to this rank's pieces, then the parameters are all-gathered), passes the
// milestones (training/run/milestones.h), and records what the profiler
// measured. Every rank runs the same steps and collectives; the loss is
// all-reduced, so a non-finite one stops every rank at the same step.
#ifndef TRAINSCOPE_TRAINING_RUN_STEP_H_
#define TRAINSCOPE_TRAINING_RUN_STEP_H_

#include <sys/types.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "kernels/storage.h"
#include "profiler/clock.h"
#include "profiler/host_load.h"
#include "profiler/step_timer.h"
#include "results/records.h"
#include "training/run/run_context.h"
#include "training/run/training_state.h"

namespace trainscope::training {

// The run's tracked peaks. The tracker's peaks are reset every step (so each
// step records its own); the run's peak is the max over the setup and every step.
struct RunPeaks {
  std::array<int64_t, kernels::kNumMemoryCategories> by_category{};
  int64_t total = 0;

  void absorb(const kernels::MemorySnapshot& snapshot) {
    for (int c = 0; c < kernels::kNumMemoryCategories; ++c) {
      by_category[c] = std::max(by_category[c], snapshot.by_category[c].peak);
    }
    total = std::max(total, snapshot.total.peak);
  }
};

// What the loop measured on this rank, for the run report.
struct StepLog {
  std::vector<results::StepRecord> steps;
  RunPeaks peaks;
  results::CommStats comm_total;      // over every step
  std::vector<pid_t> job_on_machine;  // this job's ranks on this machine (its virtual hosts too)
  profiler::HostLoad load_start;      // the host's load before the first step
  // The process's CPU seconds and the wall clock as the first step began:
  // the rank's CPU use over its steps (RankResult::cpu_s).
  double cpu_start_s = 0;
  profiler::Clock::time_point wall_start = profiler::Clock::now();
};

// Runs the loop. A non-finite loss ends it and marks `summary` failed (status,
// step and error); the validation losses go to summary.val.
StepLog train_steps(const RunContext& ctx, const RunPlan& plan, const TrainingData& data,
                    TrainingState& state, results::RunSummary& summary);

// Phases are reported without the phases nested in them (backward without
// the comm it overlaps), except comm, which is whole.
bool reported_inclusive(profiler::Phase p);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_RUN_STEP_H_
