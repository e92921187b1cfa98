// Training checkpoints: everything needed to continue a run exactly.
//
// Layout of a checkpoint directory D (--checkpoint-dir):
//   D/step-00000100/model.safetensors      parameters (Hugging Face names)
//   D/step-00000100/config.json            Hugging Face Llama config
//   D/step-00000100/optimizer.m.safetensors, optimizer.v.safetensors  AdamW moments
//   D/step-00000100/trainer_state.json     completed steps, options
//   D/latest                                name of the newest complete step dir
// A step directory is written under a temporary name and renamed into place,
// then `latest` is replaced atomically, so a crash mid-save leaves the
// previous checkpoint intact and `latest` pointing at it. Because every batch
// is a pure function of the step, (parameters, moments, step) is the whole
// state of a run.
#ifndef TRAINSCOPE_TRAINING_CHECKPOINT_H_
#define TRAINSCOPE_TRAINING_CHECKPOINT_H_

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "training/lora.h"
#include "training/model_config.h"
#include "training/param_layout.h"

namespace trainscope::training {

// `params` are the trainable tensors of `layout`: the model's, or with
// `lora` set the adapters, saved as a PEFT adapter folder
// (adapter_model.safetensors + adapter_config.json naming `base_model`)
// instead of model.safetensors.
struct CheckpointView {
  std::span<const float> params, adam_m, adam_v;
  const LoraConfig* lora = nullptr;
  std::string base_model;
};

// Makes `dir` ready for a run's checkpoints before the run trains: creates
// it, checks that it takes files, removes the temporaries of saves whose
// writer is gone (SIGKILL mid-save), and refuses (Error naming `dir`, bad
// input) a directory that holds another run's checkpoints unless this run
// resumes or `overwrite` says to replace them.
void prepare_checkpoint_dir(const std::filesystem::path& dir, bool resuming, bool overwrite);

// Returns the step directory written. SIGINT/SIGTERM/SIGHUP arriving during
// the save take effect once it is whole (DeferredSignals).
std::filesystem::path save_checkpoint(const std::filesystem::path& dir, int64_t step,
                                      const ModelConfig& config, const TensorTable& layout,
                                      const CheckpointView& view, const nlohmann::json& state);

struct CheckpointInfo {
  std::filesystem::path step_dir;
  ModelConfig config;
  nlohmann::json state;  // trainer_state.json; "step" = completed steps
  int64_t step = 0;
  bool adapters = false;  // a LoRA run's: adapters and their state, the base elsewhere
};

// `path` is a checkpoint directory (uses its `latest`) or a step directory.
// Throws trainscope::Error naming the missing or malformed file.
CheckpointInfo find_checkpoint(const std::filesystem::path& path);

// Loads the trainable tensors (parameters, or adapters when info.adapters)
// and (when non-empty spans) AdamW moments; shapes are checked against
// `layout`.
void load_checkpoint_tensors(const CheckpointInfo& info, const TensorTable& layout,
                             std::span<float> params, std::span<float> adam_m,
                             std::span<float> adam_v);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_CHECKPOINT_H_
