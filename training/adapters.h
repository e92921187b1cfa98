// LoRA adapter folders as Hugging Face PEFT writes and reads them:
//   DIR/adapter_model.safetensors   lora_A / lora_B of every adapted projection
//   DIR/adapter_config.json         r, lora_alpha, target_modules, ...
// A LoRA run's checkpoint step directory is such a folder (with the optimizer
// state and trainer_state.json beside), so its numbered copies load in PEFT,
// in `generate --adapters` and in `fuse`.
#ifndef TRAINSCOPE_TRAINING_ADAPTERS_H_
#define TRAINSCOPE_TRAINING_ADAPTERS_H_

#include <filesystem>
#include <span>
#include <string>

#include "kernels/storage.h"
#include "training/lora.h"
#include "training/model_config.h"
#include "training/param_layout.h"

namespace trainscope::training {

inline constexpr const char* kAdapterWeightsFile = "adapter_model.safetensors";
inline constexpr const char* kAdapterConfigFile = "adapter_config.json";

// Writes both files into the existing directory `dir` (each atomically).
void write_adapter_files(const std::filesystem::path& dir, const ModelConfig& model,
                         const LoraConfig& lora, std::span<const float> weights,
                         const std::string& base_model);

struct LoadedAdapters {
  std::filesystem::path dir;  // the folder the files came from
  LoraConfig config;
  kernels::Buffer<float> weights;  // LoraLayout(model, config).total() floats
};

// `path` is an adapter folder, or a checkpoint directory of a LoRA run (its
// latest step). Error (bad input) naming the file and what is wrong: no
// adapter files, a config PEFT would not apply here, tensors whose names or
// shapes belong to another base model, a tensor holding NaN or infinity.
LoadedAdapters load_adapters(const std::filesystem::path& path, const ModelConfig& model);

// params (the base model's arena) += scale * B @ A for every adapter: the
// fused weights compute what base + adapters compute.
void fuse_adapters(const ParamLayout& base, std::span<float> params, const LoraLayout& lora,
                   std::span<const float> weights, double scale);

// load_adapters(path, model) fused into `params`: what `generate --adapters`
// and `fuse` do. Returns what was read.
LoadedAdapters fuse_adapters_from(const std::filesystem::path& path, const ModelConfig& model,
                                  const ParamLayout& base, std::span<float> params);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_ADAPTERS_H_
