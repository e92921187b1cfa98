#include "training/run/export.h"

#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/atomic_file.h"
#include "base/check.h"
#include "training/hf_checkpoint.h"

namespace trainscope::training {
namespace {

using nlohmann::json;

void check_exportable(const RunContext& ctx, const std::filesystem::path& dir) {
  if (ctx.world != 1) {
    throw Error(
        fmt::format("--export-run writes the global batches of every step: run it as one process "
                    "(this job has {} ranks)",
                    ctx.world));
  }
  if (ctx.options.fine_tune == options::FineTune::kLora) {
    throw Error("--export-run exports full training only: LoRA adapters are not written");
  }
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_empty(dir, ec)) {
    throw Error(fmt::format("--export-run: {} exists and is not empty", dir.string()));
  }
}

// Step after step, the rows' inputs then their targets (int32, little
// endian as this machine's; -1: not predicted).
void write_batches(const std::filesystem::path& path, TrainingData& data, int64_t steps) {
  const auto n = static_cast<std::size_t>(data.tokens_per_rank_step());
  std::vector<int32_t> inputs(n), targets(n);
  std::string bytes;
  bytes.reserve(static_cast<std::size_t>(steps) * 2 * n * sizeof(int32_t));
  for (int64_t step = 0; step < steps; ++step) {
    data.source->batch(step, inputs, targets);
    bytes.append(reinterpret_cast<const char*>(inputs.data()), n * sizeof(int32_t));
    bytes.append(reinterpret_cast<const char*>(targets.data()), n * sizeof(int32_t));
  }
  write_file_atomically(path, bytes);
}

// What the other framework must do alike: the optimizer, the clipping, the
// learning rate of every step (so no schedule is implemented twice).
json run_record(const RunContext& ctx, const RunPlan& plan, const TrainingData& data,
                const TrainingState& state) {
  const options::TrainOptions& o = ctx.options;
  std::vector<double> lr;
  for (int64_t s = 0; s < o.steps; ++s) lr.push_back(state.schedule.at(s));
  return json{{"format", kRunExportFormat},
              {"options", plan.options_json},
              {"model", to_hf_config(plan.config)},
              {"steps", o.steps},
              {"batch", o.batch},
              {"seq_len", data.seq_len},
              {"batches", "batches.bin"},
              {"init", "init"},
              {"lr", lr},
              {"beta1", o.beta1},
              {"beta2", o.beta2},
              {"adam_eps", o.adam_eps},
              {"weight_decay", o.weight_decay},
              {"grad_clip", o.grad_clip},
              {"warmup_steps", o.warmup_steps},
              {"parameters", state.param_count()},
              {"flops_per_step", state.flops_per_step}};
}

}  // namespace

void export_run(const RunContext& ctx, const RunPlan& plan, TrainingData& data,
                const TrainingState& state) {
  const std::filesystem::path dir = ctx.options.export_dir;
  check_exportable(ctx, dir);
  std::filesystem::create_directories(dir);
  save_hf_checkpoint(dir / "init", plan.config, state.model->layout(), state.model->params());
  write_batches(dir / "batches.bin", data, ctx.options.steps);
  write_file_atomically(dir / "run.json", run_record(ctx, plan, data, state).dump(1) + "\n");
  ctx.say(fmt::format("exported the step-0 weights, {} steps of batches and the schedule to {}\n",
                      ctx.options.steps, dir.string()));
}

}  // namespace trainscope::training
