// The training loop: one `trainscope train` run, alone or as one rank of an
// mpirun job, instrumented with the profiler (phase timers, memory tracker,
// optional trace) and reporting a results::RunSummary.
//
// Every rank calls run_training() with the same options; ranks agree on the
// options at start (a mismatch is an error naming the field and the rank),
// start from rank 0's initial weights, reduce gradients with the chosen
// strategy, and end with a check that all ranks hold identical parameters.
// Rank 0 prints progress and the final tables and writes the summary, the
// merged trace and checkpoints; every rank streams its own trace as it goes
// and keeps its status file (--status-dir), and a stall watchdog on every
// rank says where it is when a collective waits beyond --stall-timeout.
#ifndef TRAINSCOPE_TRAINING_TRAINER_H_
#define TRAINSCOPE_TRAINING_TRAINER_H_

#include <cstdint>
#include <cstdio>

#include "comm/communicator.h"
#include "results/records.h"
#include "training/threads.h"
#include "options/train_options.h"

namespace trainscope::profiler {
class StallWatchdog;
}  // namespace trainscope::profiler

namespace trainscope::training {

// Runs the whole training under a stall watchdog (profiler/stall_watchdog.h)
// that watches every collective. Returns the summary (status kFailed with the error
// and step if the loss became NaN/inf). Throws trainscope::Error for bad
// input; errors every rank detects identically are thrown on every rank.
results::RunSummary run_training(const options::TrainOptions& options, comm::Communicator& comm,
                                 std::FILE* out = stdout);

// The same under a watchdog the caller started from watchdog_options()
// (training/run/stall.h) before it started MPI, whose start-up it then
// watches too (`trainscope train`); it must outlive the run.
results::RunSummary run_training(const options::TrainOptions& options, comm::Communicator& comm,
                                 profiler::StallWatchdog& watchdog, std::FILE* out = stdout);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_TRAINER_H_
