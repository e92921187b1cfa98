// The one table that declares every parameter tensor of the model.
//
// Parameters, gradients and both AdamW moments share this layout: one flat
// arena each, every tensor a named view at the same offset (llm.c's arena,
// without its parallel lists). Names follow Hugging Face Llama checkpoints;
// shapes are row-major [out, in]. Order is the forward order (embedding,
// layers 0..L-1, final norm, head), so during backward gradients become final
// from the END of the arena towards the start: a gradient bucket is a
// contiguous range, ready as soon as backward passes its first element.
//
// Within a layer q/k/v and gate/up are adjacent, so each group is also one
// fused [3C, C] or [2F, C] matrix for a single GEMM.
#ifndef TRAINSCOPE_TRAINING_PARAM_LAYOUT_H_
#define TRAINSCOPE_TRAINING_PARAM_LAYOUT_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "training/model_config.h"

namespace trainscope::training {

struct TensorSpec {
  std::string name;            // e.g. "model.layers.0.self_attn.q_proj.weight"
  std::vector<int64_t> shape;  // row-major
  int64_t offset = 0;          // in elements, into the arena
  int64_t numel = 0;
};

// Offsets of one decoder block's tensors.
struct LayerOffsets {
  int64_t input_norm, qkv, o_proj, post_norm, gate_up, down;
  int64_t begin, end;  // the block's range in the arena
};

// Named tensors laid end to end in one flat arena: what a safetensors file or
// a checkpoint holds. The model's ParamLayout is one; LoRA adapters
// (training/lora.h) are another.
class TensorTable {
 public:
  const std::vector<TensorSpec>& tensors() const { return tensors_; }
  int64_t total() const { return total_; }  // elements
  // Index of a tensor by name, or -1.
  int find(const std::string& name) const;

 protected:
  // Appends a tensor; returns its offset.
  int64_t add(std::string name, std::vector<int64_t> shape);

 private:
  std::vector<TensorSpec> tensors_;
  int64_t total_ = 0;
};

// The first tensor of `table` holding a NaN or an infinity in `values` (its
// arena), with how many of its values do: "'NAME' (N of M values)"; "" when
// every value is finite. For errors that name the culprit tensor.
std::string first_non_finite_tensor(const TensorTable& table, std::span<const float> values);

class ParamLayout : public TensorTable {
 public:
  explicit ParamLayout(const ModelConfig& config);

  int64_t embed() const { return embed_; }
  const LayerOffsets& layer(int i) const { return layers_[i]; }
  int64_t final_norm() const { return final_norm_; }
  // The output projection [V, C]: embed() when the config ties them.
  int64_t lm_head() const { return lm_head_; }

 private:
  std::vector<LayerOffsets> layers_;
  int64_t embed_ = 0, final_norm_ = 0, lm_head_ = 0;
};

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_PARAM_LAYOUT_H_
