#include "training/run/milestones.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>

#include <nlohmann/json.hpp>

#include "training/checkpoint.h"

namespace trainscope::training {

Milestones::Milestones(const RunContext& ctx, const RunPlan& plan, BatchSource* val_source,
                       TrainingState& state, std::vector<results::ValLoss>& val)
    : ctx_(ctx), plan_(plan), val_source_(val_source), state_(state), val_(val) {}

void Milestones::maybe_evaluate(int64_t step) {
  if (!val_source_) return;  // only opened when eval_every > 0
  if ((step + 1) % ctx_.options.eval_every != 0 && !ctx_.is_last(step)) return;
  auto scope = state_.timer->phase(profiler::Phase::kEval);
  evaluate(step + 1);
}

// Validation loss over the first --val-batches batches, a mean over all ranks.
void Milestones::evaluate(int64_t updates) {
  double sums[2] = {0, 0};
  for (int64_t b = 0; b < ctx_.options.val_batches; ++b) {
    val_source_->batch(b, state_.inputs.span(), state_.targets.span());
    const ForwardResult r = state_.model->forward(state_.inputs.data(), state_.targets.data(), 0.0);
    sums[0] += r.loss_sum;
    sums[1] += static_cast<double>(r.predicted);
  }
  ctx_.comm.all_reduce_sum(std::span<double>(sums, 2));
  const double loss = sums[1] > 0 ? sums[0] / sums[1] : std::nan("");
  val_.push_back({updates, loss});
  ctx_.say(fmt::format("  validation at step {}: loss {:.4f} over {} batches\n", updates, loss,
                       ctx_.options.val_batches));
}

// Rank 0 writes; the barrier keeps the others from running ahead of a slow save.
void Milestones::maybe_checkpoint(int64_t step) {
  const options::TrainOptions& o = ctx_.options;
  if (o.checkpoint_dir.empty()) return;
  const int64_t every = o.save_every;
  if (!(every > 0 && (step + 1) % every == 0) && !ctx_.is_last(step)) return;
  auto scope = state_.timer->phase(profiler::Phase::kCheckpoint);
  // --zero 1: the checkpoint holds the whole state, gathered for the save.
  kernels::Buffer<float> full_m, full_v;
  const bool sharded_state = o.zero == 1;
  if (sharded_state) {
    full_m = gather_state(state_.adam_m);
    full_v = gather_state(state_.adam_v);
  }
  if (ctx_.lead) {
    nlohmann::json saved = {{"options", plan_.options_json}, {"world_size", ctx_.world}};
    const std::optional<LoraConfig> adapters = ctx_.lora();
    save_checkpoint(o.checkpoint_dir, step + 1, plan_.config, state_.trainable_table(),
                    {.params = state_.model->trainable(),
                     .adam_m = sharded_state ? full_m.span() : state_.adam_m.span(),
                     .adam_v = sharded_state ? full_v.span() : state_.adam_v.span(),
                     .lora = adapters ? &*adapters : nullptr,
                     .base_model = o.init_from.empty() ? plan_.config.name : o.init_from},
                    saved);
  }
  ctx_.comm.barrier();
}

// A whole moment buffer from every rank's pieces of it (--zero 1).
kernels::Buffer<float> Milestones::gather_state(const kernels::Buffer<float>& pieces) {
  // Counted as a communication buffer: the sharded state itself stays 1/N.
  kernels::Buffer<float> full(state_.trainable_count(), kernels::MemoryCategory::kComm);
  int64_t at = 0;
  for (const comm::TensorRange& r : state_.opt_pieces) {
    std::copy_n(pieces.data() + at, r.numel, full.data() + r.offset);
    at += r.numel;
  }
  for (const comm::TensorRange& b : state_.zero_buckets) {
    ctx_.comm.all_gather(full.span().subspan(b.offset, b.numel));
  }
  return full;
}

}  // namespace trainscope::training
