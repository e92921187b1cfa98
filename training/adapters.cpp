#include "training/adapters.h"

#include <fmt/format.h>

#include <fstream>

#include "base/atomic_file.h"
#include "base/check.h"
#include "base/json_reader.h"
#include "kernels/lora.h"
#include "training/safetensors.h"

namespace trainscope::training {
namespace fs = std::filesystem;

void write_adapter_files(const fs::path& dir, const ModelConfig& model, const LoraConfig& lora,
                         std::span<const float> weights, const std::string& base_model) {
  save_safetensors(dir / kAdapterWeightsFile, LoraLayout(model, lora), weights,
                   {{"format", "pt"}});
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
  throw Error(fmt::format("--adapters {}: no {} here (nor in a checkpoint's latest step): not "
                          "a LoRA adapter folder",
                          path.string(), kAdapterConfigFile));
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
  try {
    load_safetensors(weights_file, layout, a.weights.span());
  } catch (const Error& e) {
    throw Error(fmt::format("{} (are these adapters for another base model than {}?)", e.what(),
                            model.name),
                e.exit_code());
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
