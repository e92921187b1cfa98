// `trainscope fuse`: a base model and its LoRA adapters merged into one
// Hugging Face checkpoint (W += alpha / r * B A), which `train --init-from`,
// `generate` and Hugging Face load like any other.
//
//   trainscope fuse --model base/step-00000400 --adapters lora-ckpt --out fused
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/validators.h"
#include "base/check.h"
#include "base/json_reader.h"
#include "kernels/storage.h"
#include "training/adapters.h"
#include "training/hf_checkpoint.h"
#include "training/safetensors.h"

namespace trainscope::cli {
namespace {

struct FuseFlags {
  std::string model, adapters, out;
  std::string dtype;  // "": the base's
  int shards = 0;     // 0: the base's files
};

// How the output is stored: as the base is (its dtype, its files and which
// tensor each holds, its config.json's fields), unless the flags say
// otherwise.
training::HfSaveOptions save_options(const FuseFlags& f, const training::ParamLayout& layout) {
  const training::HfStorage base = training::read_hf_storage(f.model);
  training::HfSaveOptions save;
  save.dtype = f.dtype.empty() ? base.dtype : training::parse_dtype(f.dtype, "--dtype");
  if (f.shards == 0) {
    save.weight_map = base.weight_map;
  } else {
    // Each shard holds whole tensors, and none is empty.
    if (const int tensors = static_cast<int>(layout.tensors().size()); f.shards > tensors) {
      throw Error(
          fmt::format("--shards {}: at most {}, the number of tensors of {} (a shard "
                      "holds whole tensors)",
                      f.shards, tensors, f.model));
    }
    save.shards = f.shards;
  }
  save.config_fields = read_json_file(std::filesystem::path(f.model) / "config.json");
  return save;
}

void run(const FuseFlags& f) {
  // Refused before anything is read: the output is never replaced.
  if (std::filesystem::exists(f.out)) {
    throw Error(fmt::format("--out {} already exists: fuse writes a new directory", f.out));
  }
  if (!f.dtype.empty()) training::parse_dtype(f.dtype, "--dtype");
  const training::ModelConfig config = training::read_hf_config(f.model);
  const training::ParamLayout layout(config);
  const training::HfSaveOptions save = save_options(f, layout);  // before the weights are read
  kernels::Buffer<float> params(layout.total(), kernels::MemoryCategory::kParameters);
  training::load_hf_weights(f.model, layout, params.span());
  const training::LoadedAdapters a =
      training::fuse_adapters_from(f.adapters, config, layout, params.span());
  training::save_hf_checkpoint(f.out, config, layout, params.span(), save);
  std::printf("fused %zu LoRA adapters (rank %d, scale %g) from %s into %s: %s\n",
              training::LoraLayout(config, a.config).adapters().size(), a.config.rank,
              a.config.scale(), a.dir.string().c_str(), f.model.c_str(), f.out.c_str());
}

}  // namespace

void add_fuse_command(CLI::App& app) {
  auto f = std::make_shared<FuseFlags>();
  CLI::App* cmd = app.add_subcommand(
      "fuse",
      "Merge LoRA adapters into their base model's weights and write the result as a Hugging "
      "Face checkpoint directory (as mlx-lm's fuse).");
  cmd->add_option("--model", f->model, "The base model: a Hugging Face Llama checkpoint directory")
      ->required();
  cmd->add_option("--adapters", f->adapters,
                  "A PEFT adapter folder, or the checkpoint directory of a --fine-tune lora run "
                  "(its latest step)")
      ->required();
  cmd->add_option("--out", f->out, "The directory to create (must not exist)")->required();
  cmd->add_option("--dtype", f->dtype,
                  "Weights on disk: F32, F16 or BF16; default: the base's (F32 if its tensors "
                  "differ)");
  cmd->add_option("--shards", f->shards,
                  "Split the weights into this many safetensors files (at most one per tensor); "
                  "default: the base's files, each tensor in the file the base has it in")
      ->check(whole_number<int>(1));
  cmd->callback([f] { run(*f); });
}

}  // namespace trainscope::cli
