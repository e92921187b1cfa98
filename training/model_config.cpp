#include "training/model_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iterator>

#include "base/json_reader.h"
#include "base/check.h"
#include "training/model_size.h"

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

// The weights against the machine's memory, named by the fields that make
// the largest part of them: that is the field to fix.
void check_weight_bytes(const ModelConfig& c, const std::string& source) {
  const double C = c.dim, L = c.n_layers, D = c.head_dim();
  struct Part {
    std::string fields;
    double bytes;
    const char* what;
  };
  const Part parts[] = {
      {fmt::format("vocab_size {} x hidden_size {}", c.vocab_size, c.dim),
       static_cast<double>(c.vocab_size) * C * (c.tie_embeddings ? 1 : 2) * 4,
       c.tie_embeddings ? "the token embedding, 4 bytes a weight"
                        : "the token embedding and the output projection, 4 bytes a weight"},
      {fmt::format("intermediate_size {} x hidden_size {} x num_hidden_layers {}", c.mlp_dim, c.dim,
                   c.n_layers),
       3.0 * c.mlp_dim * C * L * 4, "the MLP weights, 4 bytes each"},
      {fmt::format("num_attention_heads {} x head_dim {} x hidden_size {} x num_hidden_layers {}",
                   c.n_heads, c.head_dim(), c.dim, c.n_layers),
       2.0 * (c.n_heads + c.kv_heads()) * D * C * L * 4, "the attention weights, 4 bytes each"},
  };
  double total = (2 * L + 1) * C * 4;  // the norms
  for (const Part& p : parts) total += p.bytes;
  const Part& largest =
      *std::max_element(std::begin(parts), std::end(parts),
                        [](const Part& a, const Part& b) { return a.bytes < b.bytes; });
  check_fits_in_memory(source + ": " + largest.fields, largest.bytes, largest.what);
  check_fits_in_memory(source + ": the parameters", total, "every weight, 4 bytes each");
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
  if (n_kv_heads < 0)
    throw Error(fmt::format("{}: kv heads must be positive, got {}", source, n_kv_heads));
  if (head_dims < 0)
    throw Error(fmt::format("{}: head dims must be positive, got {}", source, head_dims));
  if (head_dims == 0 && dim % n_heads != 0) {
    throw Error(fmt::format("{}: heads ({}) must divide dims ({})", source, n_heads, dim));
  }
  if (n_heads % kv_heads() != 0) {
    throw Error(fmt::format("{}: key/value heads ({}) must divide heads ({})", source, kv_heads(),
                            n_heads));
  }
  if (head_dim() % 2 != 0) {
    throw Error(
        fmt::format("{}: head dims ({}) must be even for rotary embeddings", source, head_dim()));
  }
  if (!(rope_theta > 0)) throw Error(fmt::format("{}: rope_theta must be positive", source));
  if (!(norm_eps > 0)) throw Error(fmt::format("{}: norm_eps must be positive", source));
  check_weight_bytes(*this, source);
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
  const bool looks_like_path =
      preset_or_path.find('/') != std::string::npos || preset_or_path.ends_with(".json");
  if (!looks_like_path) return model_preset(preset_or_path);
  std::filesystem::path path(preset_or_path);
  if (std::filesystem::is_directory(path)) path /= "config.json";
  return from_hf_config(read_json_file(path), path.string());
}

namespace {
// A float as the shortest decimal that reads back as it (1e-05, not the
// double nearest it, 9.999999747378752e-06), for JSON's doubles.
double shortest(float f) { return std::strtod(fmt::format("{}", f).c_str(), nullptr); }
}  // namespace

nlohmann::json to_hf_config(const ModelConfig& c) {
  nlohmann::json j = {
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"hidden_size", c.dim},
      {"intermediate_size", c.mlp_dim},
      {"num_attention_heads", c.n_heads},
      {"num_key_value_heads", c.kv_heads()},
      {"head_dim", c.head_dim()},
      {"num_hidden_layers", c.n_layers},
      {"vocab_size", c.vocab_size},
      {"max_position_embeddings", c.max_seq_len},
      {"rope_theta", shortest(c.rope_theta)},
      {"rms_norm_eps", shortest(c.norm_eps)},
      {"hidden_act", "silu"},
      {"attention_bias", false},
      {"mlp_bias", false},
      {"tie_word_embeddings", c.tie_embeddings},
      {"torch_dtype", "float32"},
      {"trainscope",
       {{"preset", c.name},
        {"default_batch", c.default_batch},
        {"default_block", c.default_block}}},
  };
  if (c.bos_token_id) j["bos_token_id"] = *c.bos_token_id;
  if (c.eos_token_id) j["eos_token_id"] = *c.eos_token_id;
  return j;
}

namespace {

// What this model cannot do must not be trained as if it were plain Llama.
void reject_unsupported(const JsonReader& r) {
  if (auto act = r.find("hidden_act"); act && act->value() != "silu") {
    throw Error(fmt::format("hidden_act {} is not supported (the MLP is SwiGLU: silu)",
                            act->value().dump()));
  }
  for (const char* key : {"attention_bias", "mlp_bias"}) {
    if (auto bias = r.find(key); bias && bias->value() != false) {
      throw Error(fmt::format("{} is not supported (projections have no bias)", key));
    }
  }
  if (r.find("rope_scaling")) {
    throw Error("rope_scaling is not supported (plain rotary embeddings)");
  }
}

// The `trainscope` object our own configs carry: preset name and defaults.
void read_trainscope_defaults(const JsonReader& t, ModelConfig& c) {
  t.require_object();
  c.name = t.get_or<std::string>("preset", c.name);
  c.default_batch = t.get_or<int>("default_batch", c.default_batch);
  c.default_block = t.get_or<int>("default_block", std::min(c.max_seq_len, c.default_block));
  if (c.default_block > c.max_seq_len) {
    throw Error(fmt::format("default_block {} is larger than max_position_embeddings {}",
                            c.default_block, c.max_seq_len));
  }
}

// transformers' LlamaConfig defaults (configuration_llama.py): what a
// config.json that leaves a field out means to from_pretrained. Also
// hidden_act "silu", num_key_value_heads = num_attention_heads, head_dim =
// hidden_size / num_attention_heads, tie_word_embeddings false.
constexpr int kLlamaVocab = 32000, kLlamaHidden = 4096, kLlamaIntermediate = 11008,
              kLlamaLayers = 32, kLlamaHeads = 32, kLlamaPositions = 2048, kLlamaBos = 1,
              kLlamaEos = 2;
constexpr float kLlamaRmsNormEps = 1e-6f, kLlamaRopeTheta = 10000.0f;

ModelConfig read_hf_config(const JsonReader& r, const std::string& source) {
  r.require_object();
  reject_unsupported(r);
  ModelConfig c;
  c.name = source;
  c.dim = r.get_or<int>("hidden_size", kLlamaHidden);
  c.mlp_dim = r.get_or<int>("intermediate_size", kLlamaIntermediate);
  c.n_heads = r.get_or<int>("num_attention_heads", kLlamaHeads);
  c.n_layers = r.get_or<int>("num_hidden_layers", kLlamaLayers);
  c.vocab_size = r.get_or<int>("vocab_size", kLlamaVocab);
  c.max_seq_len = r.get_or<int>("max_position_embeddings", kLlamaPositions);
  c.bos_token_id = r.get_or<int>("bos_token_id", kLlamaBos);
  c.eos_token_id = r.get_or<int>("eos_token_id", kLlamaEos);
  // Given, they must mean something: 0 would silently fall back to the defaults.
  c.n_kv_heads = r.get_or<int>("num_key_value_heads", c.n_heads);
  if (c.n_kv_heads <= 0) {
    throw Error(fmt::format("num_key_value_heads must be positive, got {}", c.n_kv_heads));
  }
  if (auto hd = r.find("head_dim"); hd && !hd->value().is_null()) {
    c.head_dims = hd->get<int>();
    if (c.head_dims <= 0)
      throw Error(fmt::format("head_dim must be positive, got {}", c.head_dims));
  }
  c.tie_embeddings = r.get_or<bool>("tie_word_embeddings", false);
  c.rope_theta = r.get_or<float>("rope_theta", kLlamaRopeTheta);
  c.norm_eps = r.get_or<float>("rms_norm_eps", kLlamaRmsNormEps);
  if (auto t = r.find("trainscope")) {
    read_trainscope_defaults(*t, c);
  } else {
    c.default_block = std::min(c.max_seq_len, c.default_block);
  }
  return c;
}

}  // namespace

ModelConfig from_hf_config(const nlohmann::json& j, const std::string& source) {
  ModelConfig c =
      JsonReader::rethrow_in(source, [&] { return read_hf_config(JsonReader(j), source); });
  c.validate(source);
  return c;
}

}  // namespace trainscope::training
