// The architecture of a Llama-style decoder LM, its named presets, and its
// Hugging Face `config.json` form (so checkpoints load in `transformers`).
//
// A ModelConfig is a plain value; validate() throws trainscope::Error naming
// the offending field (and the source file, when it came from one).
#ifndef TRAINSCOPE_TRAINING_MODEL_CONFIG_H_
#define TRAINSCOPE_TRAINING_MODEL_CONFIG_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainscope::training {

struct ModelConfig {
  std::string name = "custom";  // preset name, or "custom" / the config file
  int n_layers = 4;             // decoder blocks
  int dim = 256;                // hidden size C
  int n_heads = 4;              // attention heads; must divide dim, head dims even
  int n_kv_heads = 0;           // key/value heads (grouped-query); 0: n_heads; divides n_heads
  int head_dims = 0;            // per head; 0: dim / n_heads
  bool tie_embeddings = false;  // the output projection is the token embedding
  int mlp_dim = 512;            // SwiGLU hidden size F
  int vocab_size = 50257;       // V; must cover the tokenizer's ids
  int max_seq_len = 512;        // longest block (tokens per example) the model accepts
  float rope_theta = 10000.0f;  // rotary base
  float norm_eps = 1e-5f;       // RMSNorm epsilon
  // The special tokens a Hugging Face config names (LlamaConfig: 1 and 2
  // when absent), written back as read; unset for the presets, whose
  // tokenizers bring their own. Not used by trainscope itself.
  std::optional<int> bos_token_id, eos_token_id;
  // Run defaults that come with a preset (not part of the architecture).
  int default_batch = 4;
  int default_block = 512;

  int head_dim() const { return head_dims > 0 ? head_dims : dim / n_heads; }
  int kv_heads() const { return n_kv_heads > 0 ? n_kv_heads : n_heads; }
  int q_dim() const { return n_heads * head_dim(); }      // width of q and of attention's output
  int kv_dim() const { return kv_heads() * head_dim(); }  // width of k and of v
  // Throws trainscope::Error naming the field; `source` names where it came from.
  void validate(const std::string& source = "model config") const;
};

// "seed" (the MLX Llama example's 4 layers x 256 dims of the DP experiments),
// "small", "tiny" (tests). Throws trainscope::Error listing the presets.
ModelConfig model_preset(std::string_view name);
std::vector<std::string> model_preset_names();

// A preset name, or the path of a Hugging Face style config.json.
ModelConfig resolve_model(const std::string& preset_or_path);

nlohmann::json to_hf_config(const ModelConfig& config);
ModelConfig from_hf_config(const nlohmann::json& j, const std::string& source);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_MODEL_CONFIG_H_
