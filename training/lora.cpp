#include "training/lora.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "base/check.h"
#include "base/json_reader.h"
#include "training/model_size.h"

namespace trainscope::training {
using nlohmann::json;

namespace {

// The one table of projections: names, the block module they sit in, their
// base weight's shape and their column in the block's fused output.
struct TargetSpec {
  LoraTarget target;
  std::string_view name, short_name, module;
  int (*in)(const ModelConfig&);
  int (*out)(const ModelConfig&);
  int (*column)(const ModelConfig&);
};
int dim(const ModelConfig& c) { return c.dim; }
int qdim(const ModelConfig& c) { return c.q_dim(); }
int kvdim(const ModelConfig& c) { return c.kv_dim(); }
int mlp(const ModelConfig& c) { return c.mlp_dim; }
int zero(const ModelConfig&) { return 0; }
int after_qk(const ModelConfig& c) { return c.q_dim() + c.kv_dim(); }

constexpr TargetSpec kTargets[kLoraTargets] = {
    {LoraTarget::kQ, "q_proj", "q", "self_attn", dim, qdim, zero},
    {LoraTarget::kK, "k_proj", "k", "self_attn", dim, kvdim, qdim},
    {LoraTarget::kV, "v_proj", "v", "self_attn", dim, kvdim, after_qk},
    {LoraTarget::kO, "o_proj", "o", "self_attn", qdim, dim, zero},
    {LoraTarget::kGate, "gate_proj", "gate", "mlp", dim, mlp, zero},
    {LoraTarget::kUp, "up_proj", "up", "mlp", dim, mlp, mlp},
    {LoraTarget::kDown, "down_proj", "down", "mlp", mlp, dim, zero},
};
const TargetSpec& spec(LoraTarget t) { return kTargets[static_cast<int>(t)]; }

// A rank at most the smallest adapted dimension, adapters that fit in memory.
void check_lora_rank(const LoraConfig& lora, const ModelConfig& model) {
  // A rank at the smallest dimension already spans every update of that
  // projection; above it A and B only grow.
  const TargetSpec* smallest = nullptr;
  double bytes = 0;
  for (LoraTarget t : lora.targets) {
    const TargetSpec& s = spec(t);
    if (smallest == nullptr ||
        std::min(s.in(model), s.out(model)) < std::min(smallest->in(model), smallest->out(model))) {
      smallest = &s;
    }
    bytes += (static_cast<double>(s.in(model)) + s.out(model)) * lora.rank * 4 *
             (model.n_layers - lora_first_layer(lora, model));
  }
  const int limit = std::min(smallest->in(model), smallest->out(model));
  if (lora.rank > limit) {
    throw Error(
        fmt::format("--lora-rank {}: above {}, the smallest dimension of the adapted "
                    "projections ({} is [{}, {}]): a larger rank adds nothing",
                    lora.rank, limit, smallest->name, smallest->out(model), smallest->in(model)));
  }
  check_fits_in_memory(fmt::format("--lora-rank {}", lora.rank), bytes,
                       "the adapters, 4 bytes a weight");
}

}  // namespace

int lora_first_layer(const LoraConfig& lora, const ModelConfig& model) {
  return lora.layers <= 0 ? 0 : model.n_layers - lora.layers;
}

void validate_lora(const LoraConfig& lora, const ModelConfig& model) {
  if (lora.rank <= 0) throw Error(fmt::format("--lora-rank must be positive, got {}", lora.rank));
  if (!(lora.alpha > 0))
    throw Error(fmt::format("--lora-alpha must be positive, got {}", lora.alpha));
  if (!(lora.dropout >= 0 && lora.dropout < 1)) {
    throw Error(fmt::format("--lora-dropout must be in [0, 1), got {}", lora.dropout));
  }
  if (lora.layers < 0 || lora.layers > model.n_layers) {
    throw Error(fmt::format("--lora-layers {}: the model has {} layers (0 adapts them all)",
                            lora.layers, model.n_layers));
  }
  if (lora.targets.empty()) throw Error("--lora-targets: no target module given");
  check_lora_rank(lora, model);
}

LoraLayout::LoraLayout(const ModelConfig& model, const LoraConfig& lora)
    : by_position_(static_cast<std::size_t>(model.n_layers) * kLoraTargets, -1) {
  validate_lora(lora, model);
  for (int l = lora_first_layer(lora, model); l < model.n_layers; ++l) {
    for (LoraTarget t : lora.targets) {
      const TargetSpec& s = spec(t);
      LoraAdapter a{.layer = l,
                    .target = t,
                    .in = s.in(model),
                    .out = s.out(model),
                    .column = s.column(model)};
      a.index = static_cast<int>(adapters_.size());
      const std::string p =
          fmt::format("base_model.model.model.layers.{}.{}.{}.", l, s.module, s.name);
      a.a = add(p + "lora_A.weight", {lora.rank, a.in});
      a.b = add(p + "lora_B.weight", {a.out, lora.rank});
      by_position_[static_cast<std::size_t>(l) * kLoraTargets + static_cast<int>(t)] = a.index;
      adapters_.push_back(a);
    }
  }
}

const LoraAdapter* LoraLayout::find(int layer, LoraTarget t) const {
  const int i =
      by_position_.at(static_cast<std::size_t>(layer) * kLoraTargets + static_cast<int>(t));
  return i < 0 ? nullptr : &adapters_[static_cast<std::size_t>(i)];
}

int64_t LoraLayout::begin_at(int layer, LoraTarget t) const {
  for (const LoraAdapter& a : adapters_) {
    if (a.layer > layer || (a.layer == layer && a.target >= t)) return a.a;
  }
  return total();
}

std::string LoraLayout::base_tensor_name(const LoraAdapter& a) {
  const TargetSpec& s = spec(a.target);
  return fmt::format("model.layers.{}.{}.{}.weight", a.layer, s.module, s.name);
}

json to_peft_config(const LoraConfig& lora, const ModelConfig& model,
                    const std::string& base_model) {
  json targets = json::array();
  for (LoraTarget t : lora.targets) targets.push_back(enum_name(t));
  json layers = nullptr;
  if (lora.layers > 0) {
    layers = json::array();
    for (int l = lora_first_layer(lora, model); l < model.n_layers; ++l) layers.push_back(l);
  }
  return {{"peft_type", "LORA"},
          {"task_type", "CAUSAL_LM"},
          {"r", lora.rank},
          {"lora_alpha", lora.alpha},
          {"lora_dropout", lora.dropout},
          {"target_modules", targets},
          {"layers_to_transform", layers},
          {"bias", "none"},
          {"fan_in_fan_out", false},
          {"use_rslora", false},
          {"inference_mode", true},
          {"base_model_name_or_path", base_model}};
}

namespace {
// PEFT's layers_to_transform as our "last N": null, an int, or a list that
// must be the last N layers.
int read_layers(const JsonReader& r, const ModelConfig& model) {
  const auto layers = r.find("layers_to_transform");
  if (!layers) return 0;
  if (layers->value().is_number_integer()) {
    const int l = layers->get<int>();
    if (l != model.n_layers - 1) layers->fail("adapts a single layer that is not the last one");
    return 1;
  }
  const std::size_t n = layers->size();
  for (std::size_t i = 0; i < n; ++i) {
    if ((*layers)[i].get<int>() != model.n_layers - static_cast<int>(n) + static_cast<int>(i)) {
      layers->fail(
          fmt::format("must list the last layers of the {}-layer model in order", model.n_layers));
    }
  }
  return static_cast<int>(n);
}
}  // namespace

LoraConfig from_peft_config(const json& j, const ModelConfig& model, const std::string& source) {
  return JsonReader::rethrow_in(source, [&] {
    const JsonReader r(j);
    r.require_object();
    if (const auto type = r.find("peft_type"); type && type->get<std::string>() != "LORA") {
      type->fail(
          fmt::format("is '{}'; only LORA adapters are supported", type->get<std::string>()));
    }
    if (const auto bias = r.find("bias"); bias && bias->get<std::string>() != "none") {
      bias->fail(
          fmt::format("is '{}'; adapters with biases are not supported", bias->get<std::string>()));
    }
    if (r.get_or("fan_in_fan_out", false)) r["fan_in_fan_out"].fail("is true; not supported");
    if (r.get_or("use_rslora", false)) r["use_rslora"].fail("is true; not supported");
    LoraConfig c;
    c.rank = r["r"].get<int>();
    if (c.rank <= 0) r["r"].fail(fmt::format("is {}; the rank must be positive", c.rank));
    c.alpha = r["lora_alpha"].get<double>();
    if (!(c.alpha > 0)) r["lora_alpha"].fail(fmt::format("is {}; must be positive", c.alpha));
    c.dropout = r.get_or("lora_dropout", 0.0);
    c.layers = read_layers(r, model);
    const JsonReader modules = r["target_modules"];
    c.targets.clear();
    std::string list;
    for (std::size_t i = 0; i < modules.size(); ++i) {
      if (i > 0) list += ',';
      list += modules[i].get<std::string>();
    }
    c.targets = options::parse_lora_targets(list, "target_modules");
    validate_lora(c, model);
    return c;
  });
}

}  // namespace trainscope::training
