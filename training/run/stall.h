// The stall watchdog a run trains under (profiler/stall_watchdog.h), set up
// from its options: the timeout, the status file each rank keeps, and with
// --stall-action abort the end of a stalled job once the stall outlasts the
// grace period, naming the ranks that have not arrived as their status files
// show them.
//
// The status files go to --status-dir; without it, a job of several ranks
// keeps them in the directory its launcher keeps for it
// (comm::launcher_job_dir(), Open MPI's session directory), which goes with
// the job: a stalled job names the rank it waits for with no flag given.
#ifndef TRAINSCOPE_TRAINING_RUN_STALL_H_
#define TRAINSCOPE_TRAINING_RUN_STALL_H_

#include <string>

#include "profiler/stall_watchdog.h"
#include "options/train_options.h"

namespace trainscope::training {

// The rank a watchdog watches: rank `rank` of a job of `world` on `host`.
// Known before MPI starts (comm::launched_place()), so the watchdog can
// watch MPI's start-up too.
struct WatchedRank {
  int rank = 0;
  int world = 1;
  std::string host;
};

// Makes the status directory (each rank: an error names it on the rank that
// cannot, which ends the job).
profiler::StallWatchdogOptions watchdog_options(const options::TrainOptions& options,
                                                const WatchedRank& watched);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_RUN_STALL_H_
