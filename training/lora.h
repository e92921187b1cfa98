// LoRA adapters for the Llama model: which projections get one (their
// settings: options/lora_options.h), and the one table that lays the
// adapters out in a flat arena.
//
// Adapted projection P of layer N holds A [r, in] and B [out, r], named as
// Hugging Face PEFT saves them:
//   base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight
// In the arena adapters follow the model's forward order (layers ascending;
// q, k, v, o, gate, up, down; A then B), so, as with the model's own
// ParamLayout, backward finishes gradients from the END of the arena towards
// the start and a gradient bucket is a contiguous range.
#ifndef TRAINSCOPE_TRAINING_LORA_H_
#define TRAINSCOPE_TRAINING_LORA_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "options/lora_options.h"
#include "training/model_config.h"
#include "training/param_layout.h"

namespace trainscope::training {

using options::kLoraTargets;
using options::LoraConfig;
using options::LoraTarget;

// The first adapted block of `model` (blocks below it need no backward at all).
int lora_first_layer(const LoraConfig& lora, const ModelConfig& model);
// Error naming the flag (`--lora-rank`...) for what cannot be built: a
// rank above the smallest dimension of an adapted projection, or adapters
// beyond the machine's memory, included.
void validate_lora(const LoraConfig& lora, const ModelConfig& model);

// One adapted projection.
struct LoraAdapter {
  int layer = 0;
  LoraTarget target = LoraTarget::kQ;
  int in = 0, out = 0;   // the base weight is [out, in]
  int column = 0;        // where its output starts in the fused block output (q/k/v, gate/up)
  int64_t a = 0, b = 0;  // offsets of A and B in the arena
  int index = 0;         // position in adapters()
};

class LoraLayout : public TensorTable {
 public:
  LoraLayout(const ModelConfig& model, const LoraConfig& lora);

  const std::vector<LoraAdapter>& adapters() const { return adapters_; }
  using TensorTable::find;  // by name
  // The adapter of layer l's projection t, or null.
  const LoraAdapter* find(int layer, LoraTarget t) const;
  // Arena offset of the first adapter at or after (layer, t) in arena order;
  // total() when there is none. After backward has passed projection t of
  // layer l, the gradients from here to the end are final.
  int64_t begin_at(int layer, LoraTarget t) const;
  // The base tensor an adapter changes ("model.layers.0.self_attn.q_proj.weight").
  static std::string base_tensor_name(const LoraAdapter& a);

 private:
  std::vector<LoraAdapter> adapters_;
  std::vector<int> by_position_;  // layer * kLoraTargets + target -> adapter index or -1
};

// PEFT's adapter_config.json for these adapters, and back. The reader takes
// what PEFT writes (r, lora_alpha, lora_dropout, target_modules,
// layers_to_transform) and refuses what trainscope cannot apply (biases,
// fan_in_fan_out, another peft_type, layers that are not the last N), naming
// `source` and the key.
nlohmann::json to_peft_config(const LoraConfig& lora, const ModelConfig& model,
                              const std::string& base_model);
LoraConfig from_peft_config(const nlohmann::json& j, const ModelConfig& model,
                            const std::string& source);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_LORA_H_
