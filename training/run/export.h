// --export-run DIR: what another framework needs to train the very run this
// one would, written instead of training: the step-0 weights (a Hugging Face
// directory, DIR/init), every step's global batch (DIR/batches.bin) and the
// schedule and optimizer settings (DIR/run.json). The PyTorch peer of the
// suites (bench/pytorch/ddp_train.py) reads it, so both engines start from
// the same weights and see the same tokens in the same order.
#ifndef TRAINSCOPE_TRAINING_RUN_EXPORT_H_
#define TRAINSCOPE_TRAINING_RUN_EXPORT_H_

#include "training/run/run_context.h"
#include "training/run/training_state.h"

namespace trainscope::training {

// The format tag of run.json.
inline constexpr const char* kRunExportFormat = "trainscope.run_export/1";

// Writes DIR (which must not exist, or be empty). One process only: the
// batches written are the global ones, which a sharded strided run's ranks
// split row r, r + N, ... Error (bad input) for a LoRA run (its adapters are
// not exported) or more than one rank.
void export_run(const RunContext& ctx, const RunPlan& plan, TrainingData& data,
                const TrainingState& state);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_RUN_EXPORT_H_
