// The stall watchdog a run trains under (profiler/stall_watchdog.h), set up
// from its options: the timeout, the status file each rank keeps
// (--status-dir), and with --stall-action abort the end of a stalled job
// once the stall outlasts the grace period, naming the ranks that have not
// arrived as their status files show them.
#ifndef TRAINSCOPE_TRAINING_RUN_STALL_H_
#define TRAINSCOPE_TRAINING_RUN_STALL_H_

#include "comm/communicator.h"
#include "profiler/stall_watchdog.h"
#include "training/train_options.h"

namespace trainscope::training {

// Collective: the ranks agree on whether the status directory could be made.
profiler::StallWatchdogOptions watchdog_options(const TrainOptions& options,
                                                comm::Communicator& comm);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_RUN_STALL_H_
