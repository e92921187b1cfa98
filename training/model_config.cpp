#include "training/model_config.h"

#include <fmt/format.h>

#include <filesystem>

#include "kernels/atomic_file.h"
#include "kernels/check.h"

namespace trainscope::training {
namespace {

ModelConfig make(const char* name, int layers, int dim, int heads, int mlp, int vocab, int max_seq,
                 int batch, int block) {
  ModelConfig c;
  c.name = name;
  c.n_layers = layers;
  c.dim = dim;
  c.n_heads = heads;
  c.mlp_dim = mlp;
  c.vocab_size = vocab;
  c.max_seq_len = max_seq;
  c.default_batch = batch;
  c.default_block = block;
  return c;
}

const std::vector<ModelConfig>& presets() {
  static const std::vector<ModelConfig> kPresets = {
      // The configuration of the MLX Llama example used by the DP experiments on TinyStories.
      make("seed", 4, 256, 4, 512, 50257, 512, 4, 512),
      make("small", 4, 128, 4, 384, 50257, 256, 4, 256),
      // Vocabulary 260 covers the byte tokenizer (257 ids).
      make("tiny", 2, 32, 4, 64, 260, 64, 4, 32),
  };
  return kPresets;
}

}  // namespace

void ModelConfig::validate(const std::string& source) const {
  auto positive = [&](const char* field, long long v) {
    if (v <= 0) throw Error(fmt::format("{}: {} must be positive, got {}", source, field, v));
  };
  positive("layers", n_layers);
  positive("dims", dim);
  positive("heads", n_heads);
  positive("mlp_dims", mlp_dim);
  positive("vocab", vocab_size);
  positive("max_seq", max_seq_len);
  positive("default_batch", default_batch);
  positive("default_block", default_block);
  if (dim % n_heads != 0) {
    throw Error(fmt::format("{}: heads ({}) must divide dims ({})", source, n_heads, dim));
  }
  if (head_dim() % 2 != 0) {
    throw Error(fmt::format("{}: head dims (dims / heads = {}) must be even for rotary embeddings",
                            source, head_dim()));
  }
  if (!(rope_theta > 0)) throw Error(fmt::format("{}: rope_theta must be positive", source));
  if (!(norm_eps > 0)) throw Error(fmt::format("{}: norm_eps must be positive", source));
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : presets()) names.push_back(p.name);
  return names;
}

ModelConfig model_preset(std::string_view name) {
  for (const auto& p : presets()) {
    if (p.name == name) return p;
  }
  throw Error(fmt::format("unknown model preset '{}' (presets: {}; or a config.json path)", name,
                          fmt::join(model_preset_names(), ", ")));
}

ModelConfig resolve_model(const std::string& preset_or_path) {
  const bool looks_like_path = preset_or_path.find('/') != std::string::npos ||
                               preset_or_path.ends_with(".json");
  if (!looks_like_path) return model_preset(preset_or_path);
  std::filesystem::path path(preset_or_path);
  if (std::filesystem::is_directory(path)) path /= "config.json";
  return from_hf_config(read_json_file(path), path.string());
}

nlohmann::json to_hf_config(const ModelConfig& c) {
  return {
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"hidden_size", c.dim},
      {"intermediate_size", c.mlp_dim},
      {"num_attention_heads", c.n_heads},
      {"num_key_value_heads", c.n_heads},
      {"num_hidden_layers", c.n_layers},
      {"vocab_size", c.vocab_size},
      {"max_position_embeddings", c.max_seq_len},
      {"rope_theta", c.rope_theta},
      {"rms_norm_eps", c.norm_eps},
      {"hidden_act", "silu"},
      {"attention_bias", false},
      {"mlp_bias", false},
      {"tie_word_embeddings", false},
      {"torch_dtype", "float32"},
      {"trainscope", {{"preset", c.name}, {"default_batch", c.default_batch},
                      {"default_block", c.default_block}}},
  };
}

ModelConfig from_hf_config(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw Error(fmt::format("{}: expected a JSON object", source));
  auto get_int = [&](const char* key) -> int {
    if (!j.contains(key)) throw Error(fmt::format("{}: missing field '{}'", source, key));
    if (!j[key].is_number_integer()) {
      throw Error(fmt::format("{}: field '{}' must be an integer", source, key));
    }
    return j[key].get<int>();
  };
  // Optional fields are checked too: a string where a number belongs is an
  // error naming the file and the field, not a library exception.
  auto get_float = [&](const nlohmann::json& o, const char* key, float fallback) -> float {
    if (!o.contains(key)) return fallback;
    if (!o[key].is_number()) throw Error(fmt::format("{}: field '{}' must be a number", source, key));
    return o[key].get<float>();
  };
  auto get_optional_int = [&](const nlohmann::json& o, const char* key, int fallback) -> int {
    if (!o.contains(key)) return fallback;
    if (!o[key].is_number_integer()) {
      throw Error(fmt::format("{}: field '{}' must be an integer", source, key));
    }
    return o[key].get<int>();
  };
  // What this model cannot do must not be trained as if it were plain Llama.
  if (j.contains("hidden_act") && j["hidden_act"] != "silu") {
    throw Error(fmt::format("{}: hidden_act {} is not supported (the MLP is SwiGLU: silu)", source,
                            j["hidden_act"].dump()));
  }
  for (const char* key : {"attention_bias", "mlp_bias"}) {
    if (j.contains(key) && j[key] != false) {
      throw Error(fmt::format("{}: {} is not supported (projections have no bias)", source, key));
    }
  }
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    throw Error(fmt::format("{}: rope_scaling is not supported (plain rotary embeddings)", source));
  }
  ModelConfig c;
  c.name = source;
  c.dim = get_int("hidden_size");
  c.mlp_dim = get_int("intermediate_size");
  c.n_heads = get_int("num_attention_heads");
  c.n_layers = get_int("num_hidden_layers");
  c.vocab_size = get_int("vocab_size");
  c.max_seq_len = get_int("max_position_embeddings");
  if (j.contains("num_key_value_heads") && j["num_key_value_heads"] != c.n_heads) {
    throw Error(fmt::format("{}: num_key_value_heads must equal num_attention_heads (grouped-query "
                            "attention is not supported)",
                            source));
  }
  if (j.value("tie_word_embeddings", false)) {
    throw Error(fmt::format("{}: tie_word_embeddings is not supported (the output projection is "
                            "untied)",
                            source));
  }
  c.rope_theta = get_float(j, "rope_theta", c.rope_theta);
  c.norm_eps = get_float(j, "rms_norm_eps", c.norm_eps);
  if (j.contains("trainscope")) {
    const auto& t = j["trainscope"];
    if (!t.is_object()) throw Error(fmt::format("{}: field 'trainscope' must be an object", source));
    if (t.contains("preset") && !t["preset"].is_string()) {
      throw Error(fmt::format("{}: field 'preset' must be a string", source));
    }
    c.name = t.value("preset", c.name);
    c.default_batch = get_optional_int(t, "default_batch", c.default_batch);
    c.default_block =
        get_optional_int(t, "default_block", std::min(c.max_seq_len, c.default_block));
    if (c.default_block > c.max_seq_len) {
      throw Error(fmt::format("{}: default_block {} is larger than max_position_embeddings {}",
                              source, c.default_block, c.max_seq_len));
    }
  } else {
    c.default_block = std::min(c.max_seq_len, c.default_block);
  }
  c.validate(source);
  return c;
}

}  // namespace trainscope::training
