#include "training/param_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace trainscope::training {

int64_t TensorTable::add(std::string name, std::vector<int64_t> shape) {
  TensorSpec t{std::move(name), std::move(shape), total_, 1};
  for (int64_t d : t.shape) t.numel *= d;
  total_ += t.numel;
  tensors_.push_back(std::move(t));
  return tensors_.back().offset;
}

ParamLayout::ParamLayout(const ModelConfig& c) {
  const int64_t C = c.dim, F = c.mlp_dim, V = c.vocab_size, Q = c.q_dim(), KV = c.kv_dim();
  embed_ = add("model.embed_tokens.weight", {V, C});
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    LayerOffsets l{};
    l.begin = total();
    l.input_norm = add(p + "input_layernorm.weight", {C});
    l.qkv = add(p + "self_attn.q_proj.weight", {Q, C});
    add(p + "self_attn.k_proj.weight", {KV, C});
    add(p + "self_attn.v_proj.weight", {KV, C});
    l.o_proj = add(p + "self_attn.o_proj.weight", {C, Q});
    l.post_norm = add(p + "post_attention_layernorm.weight", {C});
    l.gate_up = add(p + "mlp.gate_proj.weight", {F, C});
    add(p + "mlp.up_proj.weight", {F, C});
    l.down = add(p + "mlp.down_proj.weight", {C, F});
    l.end = total();
    layers_.push_back(l);
  }
  final_norm_ = add("model.norm.weight", {C});
  // Tied: the head reads the embedding's rows, and its gradient adds into them.
  lm_head_ = c.tie_embeddings ? embed_ : add("lm_head.weight", {V, C});
}

int TensorTable::find(const std::string& name) const {
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    if (tensors_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::string first_non_finite_tensor(const TensorTable& table, std::span<const float> values) {
  for (const TensorSpec& t : table.tensors()) {
    const auto mine =
        values.subspan(static_cast<std::size_t>(t.offset), static_cast<std::size_t>(t.numel));
    const auto bad =
        std::count_if(mine.begin(), mine.end(), [](float v) { return !std::isfinite(v); });
    if (bad > 0) return fmt::format("'{}' ({} of {} values)", t.name, bad, t.numel);
  }
  return "";
}

}  // namespace trainscope::training
