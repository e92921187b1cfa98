// Setting a training run up, in the stages the coordinator
// (training/trainer.cpp) calls in order, each building one struct of
// training/run/training_state.h. Every rank calls every stage. A stage that
// can fail on one rank alone (a file missing on its host) ends in agreement
// (comm::run_collectively): every rank then throws the same CollectiveError,
// said once, and none is left waiting in a collective.
#ifndef TRAINSCOPE_TRAINING_RUN_SETUP_H_
#define TRAINSCOPE_TRAINING_RUN_SETUP_H_

#include "profiler/stall_watchdog.h"
#include "training/run/run_context.h"
#include "training/run/training_state.h"

namespace trainscope::training {

// The model (the checkpoint's when resuming, else --init-from's or --model),
// the batch and block defaults (into ctx.options), the options checked, the
// resume checked against the checkpoint, the tokenizer, rank 0's outputs
// checked writable, this process's threads; then the ranks' options compared
// (Error naming the field and the rank) and, when tracing, their clocks.
RunPlan configure_run(RunContext& ctx);

// This rank's batch source, and the validation source with --eval-every.
TrainingData load_run_data(const RunContext& ctx, const RunPlan& plan);

// The gradient reducer, the model, this rank's AdamW moments, rank 0's
// initial weights and state broadcast to all, and what every step uses.
// The step timer and the reductions report to `watchdog`, which must outlive
// `state`; `state` is the one the coordinator made for this rank.
void build_training_state(const RunContext& ctx, const RunPlan& plan, const TrainingData& data,
                          profiler::StallWatchdog& watchdog, TrainingState& state);

// Rank 0's lines on the model, what trains, the data and the parallelism.
void print_run_header(const RunContext& ctx, const RunPlan& plan, const TrainingData& data,
                      const TrainingState& state);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_RUN_SETUP_H_
