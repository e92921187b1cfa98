// What a model costs to train, from its configuration alone: model FLOPs a
// step and the parameters it trains (LlamaModel's static members, apart
// from the code that runs it).
#include <optional>

#include "training/llama_model.h"
#include "training/lora.h"
#include "training/param_layout.h"

namespace trainscope::training {

template <typename T>
double LlamaModel<T>::train_flops(const ModelConfig& c, int B, int Tn,
                                  const std::optional<LoraConfig>& lora) {
  const double C = c.dim, F = c.mlp_dim, V = c.vocab_size, L = c.n_layers, Q = c.q_dim(),
               KV = c.kv_dim();
  const double per_layer = C * (2 * Q + 2 * KV) + 3 * C * F + 2 * C;  // weights a token meets
  const double head = C + V * C, attention = Tn * Q;                  // per layer: 12 x this
  const double tokens = double(B) * Tn;
  if (!lora) return tokens * (6 * (L * per_layer + head) + 12 * L * attention);
  const double below = lora_first_layer(*lora, c), adapted = L - below;
  const double adapters = static_cast<double>(LoraLayout(c, *lora).total());
  return tokens * (4 * (adapted * per_layer + head) + 2 * below * per_layer + 6 * adapters +
                   (12 * adapted + 4 * below) * attention);
}

template <typename T>
int64_t LlamaModel<T>::trainable_count(const ModelConfig& config,
                                       const std::optional<LoraConfig>& lora) {
  return lora ? LoraLayout(config, *lora).total() : ParamLayout(config).total();
}

// Members instantiated here (the class is in llama_model.cpp).
template double LlamaModel<float>::train_flops(const ModelConfig&, int, int,
                                               const std::optional<LoraConfig>&);
template double LlamaModel<double>::train_flops(const ModelConfig&, int, int,
                                                const std::optional<LoraConfig>&);
template int64_t LlamaModel<float>::trainable_count(const ModelConfig&,
                                                    const std::optional<LoraConfig>&);
template int64_t LlamaModel<double>::trainable_count(const ModelConfig&,
                                                     const std::optional<LoraConfig>&);

}  // namespace trainscope::training
