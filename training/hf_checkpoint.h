// Hugging Face Llama checkpoint directories, as `from_pretrained` reads and
// `save_pretrained` writes them: config.json plus either model.safetensors
// or model.safetensors.index.json, whose weight_map names the shard file of
// every tensor (model-00001-of-00003.safetensors ...). Tensors may be F32,
// F16 or BF16 on disk; they are float in memory. trainscope's own
// checkpoint step directories are such directories too (F32, one file).
//
// Readers throw trainscope::Error (bad input) naming the directory, the file
// and the tensor: no weights file, a shard the index names but that is
// missing, a tensor in the wrong shard or in two, a tensor missing, a shape
// that does not match config.json.
#ifndef TRAINSCOPE_TRAINING_HF_CHECKPOINT_H_
#define TRAINSCOPE_TRAINING_HF_CHECKPOINT_H_

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "training/model_config.h"
#include "training/param_layout.h"
#include "training/safetensors.h"

namespace trainscope::training {

// dir/config.json as a ModelConfig (refusing what the model cannot train,
// by key).
ModelConfig read_hf_config(const std::filesystem::path& dir);

// Fills `params` (layout.total() floats) from the directory's weights.
void load_hf_weights(const std::filesystem::path& dir, const ParamLayout& layout,
                     std::span<float> params);

struct HfSaveOptions {
  Dtype dtype = Dtype::kF32;
  int shards = 1;  // > 1: model-0000K-of-0000N.safetensors and the index
  // Non-empty: the file of every tensor (as an index's weight_map), instead
  // of `shards` even parts; one file named model.safetensors means no index.
  std::map<std::string, std::string> weight_map = {};
  // An object: config.json's fields (a base model's own config.json, every
  // field kept) instead of to_hf_config(config). Either way torch_dtype says
  // `dtype`.
  nlohmann::json config_fields = nullptr;
};

// How a checkpoint directory stores its weights, for a new one stored alike.
struct HfStorage {
  Dtype dtype = Dtype::kF32;  // of every tensor; F32 when they differ (nothing rounds)
  std::map<std::string, std::string> weight_map;  // tensor -> file
  int files = 1;
};
HfStorage read_hf_storage(const std::filesystem::path& dir);

// "float32", "float16", "bfloat16": config.json's torch_dtype.
std::string_view torch_dtype_name(Dtype dtype);

// Writes config.json and the weights into `dir`, which must not exist yet:
// everything goes to a temporary sibling first (.DIR.tmp-PID) and is renamed
// into place, so no reader ever sees half a checkpoint. SIGINT, SIGTERM or
// SIGHUP during the save removes the temporary (between files), then takes
// effect; the temporaries of earlier saves into `dir` whose process is gone
// (SIGKILL) are removed first.
void save_hf_checkpoint(const std::filesystem::path& dir, const ModelConfig& config,
                        const ParamLayout& layout, std::span<const float> params,
                        const HfSaveOptions& options = {});

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_HF_CHECKPOINT_H_
