#include "training/adapters.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>
#include <utility>
#include <vector>

#include "base/atomic_file.h"
#include "base/check.h"
#include "base/json_reader.h"
#include "kernels/lora.h"
#include "training/safetensors.h"

namespace trainscope::training {
namespace fs = std::filesystem;

void write_adapter_files(const fs::path& dir, const ModelConfig& model, const LoraConfig& lora,
                         std::span<const float> weights, const std::string& base_model) {
  save_safetensors(dir / kAdapterWeightsFile, LoraLayout(model, lora), weights, {{"format", "pt"}});
  write_file_atomically(dir / kAdapterConfigFile,
                        to_peft_config(lora, model, base_model).dump(2) + "\n");
}

namespace {
// The folder itself, or the latest step of a checkpoint directory.
fs::path adapter_folder(const fs::path& path) {
  if (!fs::is_directory(path)) {
    throw Error(fmt::format("--adapters {}: not a directory", path.string()));
  }
  if (fs::exists(path / kAdapterConfigFile)) return path;
  if (fs::exists(path / "latest")) {
    std::ifstream in(path / "latest");
    std::string name;
    std::getline(in, name);
    if (!name.empty() && fs::exists(path / name / kAdapterConfigFile)) return path / name;
  }
  throw Error(
      fmt::format("--adapters {}: no {} here (nor in a checkpoint's latest step): not "
                  "a LoRA adapter folder",
                  path.string(), kAdapterConfigFile));
}
}  // namespace

namespace {

// The projection a PEFT tensor name adapts ("...self_attn.q_proj.lora_A.weight"),
// and its rank (A is [r, in], B [out, r]); nullopt for other names.
std::optional<std::pair<LoraTarget, int64_t>> adapter_of(const std::string& name,
                                                         const std::vector<int64_t>& shape) {
  for (const char* kind : {".lora_A.weight", ".lora_B.weight"}) {
    if (!name.ends_with(kind) || shape.size() != 2) continue;
    const std::string stem = name.substr(0, name.size() - std::strlen(kind));
    const std::string module = stem.substr(stem.rfind('.') + 1);
    for (int t = 0; t < kLoraTargets; ++t) {
      if (enum_name(static_cast<LoraTarget>(t)) == module) {
        return std::pair{static_cast<LoraTarget>(t), kind[6] == 'A' ? shape[0] : shape[1]};
      }
    }
  }
  return std::nullopt;
}

// The folder against itself, before it is held against the base: its
// tensors must have the rank and adapt the modules its config names, or
// whatever follows would blame the base model for the folder's own fault.
void check_folder_agrees(const fs::path& dir, const LoraConfig& config) {
  std::vector<LoraTarget> held;
  for (const auto& [name, info] : read_safetensors_header(dir / kAdapterWeightsFile)) {
    const auto adapter = adapter_of(name, info.shape);
    if (!adapter) continue;
    if (adapter->second != config.rank) {
      throw Error(
          fmt::format("--adapters {}: {} says r {}, but {} holds rank-{} adapters ('{}' "
                      "is [{}]): the folder disagrees with itself",
                      dir.string(), kAdapterConfigFile, config.rank, kAdapterWeightsFile,
                      adapter->second, name, fmt::join(info.shape, ", ")));
    }
    if (std::find(held.begin(), held.end(), adapter->first) == held.end()) {
      held.push_back(adapter->first);
    }
  }
  std::sort(held.begin(), held.end());
  std::vector<LoraTarget> unnamed, missing;
  for (LoraTarget t : held) {
    if (std::find(config.targets.begin(), config.targets.end(), t) == config.targets.end()) {
      unnamed.push_back(t);
    }
  }
  for (LoraTarget t : config.targets) {
    if (std::find(held.begin(), held.end(), t) == held.end()) missing.push_back(t);
  }
  if (!unnamed.empty()) {
    throw Error(
        fmt::format("--adapters {}: {} holds {} adapters, which {}'s target_modules ({}) "
                    "does not name: the folder disagrees with itself",
                    dir.string(), kAdapterWeightsFile, options::lora_targets_list(unnamed),
                    kAdapterConfigFile, options::lora_targets_list(config.targets)));
  }
  if (!missing.empty()) {
    throw Error(
        fmt::format("--adapters {}: {}'s target_modules names {}, but {} holds no such "
                    "adapters: the folder disagrees with itself",
                    dir.string(), kAdapterConfigFile, options::lora_targets_list(missing),
                    kAdapterWeightsFile));
  }
}

}  // namespace

LoadedAdapters load_adapters(const fs::path& path, const ModelConfig& model) {
  LoadedAdapters a;
  a.dir = adapter_folder(path);
  const fs::path config_file = a.dir / kAdapterConfigFile;
  a.config = from_peft_config(read_json_file(config_file), model, config_file.string());
  const LoraLayout layout(model, a.config);
  a.weights = kernels::Buffer<float>(layout.total(), kernels::MemoryCategory::kParameters);
  const fs::path weights_file = a.dir / kAdapterWeightsFile;
  if (!fs::exists(weights_file)) {
    throw Error(fmt::format("--adapters {}: {} is missing", a.dir.string(), kAdapterWeightsFile));
  }
  check_folder_agrees(a.dir, a.config);
  try {
    load_safetensors(weights_file, layout, a.weights.span());
  } catch (const Error& e) {
    throw Error(fmt::format("{} (are these adapters for another base model than {}?)", e.what(),
                            model.name),
                e.exit_code());
  }
  // Merged, a NaN would spread through the base weight it adapts, and be
  // blamed on it.
  if (const std::string bad = first_non_finite_tensor(layout, a.weights.span()); !bad.empty()) {
    throw Error(fmt::format("--adapters {}: {} holds NaN or infinite values: {}", a.dir.string(),
                            kAdapterWeightsFile, bad));
  }
  return a;
}

void fuse_adapters(const ParamLayout& base, std::span<float> params, const LoraLayout& lora,
                   std::span<const float> weights, double scale) {
  TS_CHECK(static_cast<int64_t>(params.size()) == base.total());
  TS_CHECK(static_cast<int64_t>(weights.size()) == lora.total());
  const int r = static_cast<int>(lora.tensors().front().shape[0]);
  for (const LoraAdapter& a : lora.adapters()) {
    const int i = base.find(LoraLayout::base_tensor_name(a));
    TS_CHECK(i >= 0) << LoraLayout::base_tensor_name(a);
    kernels::lora_merge(params.data() + base.tensors()[static_cast<std::size_t>(i)].offset,
                        weights.data() + a.a, weights.data() + a.b, a.in, a.out, r,
                        static_cast<float>(scale));
  }
}

LoadedAdapters fuse_adapters_from(const fs::path& path, const ModelConfig& model,
                                  const ParamLayout& base, std::span<float> params) {
  LoadedAdapters a = load_adapters(path, model);
  fuse_adapters(base, params, LoraLayout(model, a.config), a.weights.span(), a.config.scale());
  return a;
}

}  // namespace trainscope::training
