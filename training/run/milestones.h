// The milestones of a run, passed after a step's optimizer update: the
// validation loss (every --eval-every steps and at the last step) and
// checkpoints (every --save-every steps and at the last step). Every rank
// calls both after every step and decides alike whether one is due, since
// both take collectives: the validation losses are all-reduced, a ZeRO-1
// checkpoint gathers the sharded moments, and every save ends in a barrier.
#ifndef TRAINSCOPE_TRAINING_RUN_MILESTONES_H_
#define TRAINSCOPE_TRAINING_RUN_MILESTONES_H_

#include <cstdint>
#include <vector>

#include "kernels/storage.h"
#include "results/records.h"
#include "training/data/batch_source.h"
#include "training/run/run_context.h"
#include "training/run/training_state.h"

namespace trainscope::training {

class Milestones {
 public:
  // `val_source` null: no evaluation. Validation losses are appended to
  // `val`. Every argument must outlive this.
  Milestones(const RunContext& ctx, const RunPlan& plan, BatchSource* val_source,
             TrainingState& state, std::vector<results::ValLoss>& val);
  Milestones(const Milestones&) = delete;
  Milestones& operator=(const Milestones&) = delete;

  // After step `step` (0-based; the model has then taken step + 1 updates).
  // The validation loss, over the first --val-batches batches.
  void maybe_evaluate(int64_t step);
  // A checkpoint of step + 1 in --checkpoint-dir, written by rank 0.
  void maybe_checkpoint(int64_t step);

 private:
  void evaluate(int64_t updates);
  kernels::Buffer<float> gather_state(const kernels::Buffer<float>& pieces);

  const RunContext& ctx_;
  const RunPlan& plan_;
  BatchSource* val_source_;
  TrainingState& state_;
  std::vector<results::ValLoss>& val_;
};

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_RUN_MILESTONES_H_
