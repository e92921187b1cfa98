// Issue 25 item 15: a config.json that leaves a field out means what
// transformers' LlamaConfig means by it (its defaults, read from
// configuration_llama.py), field by field.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "training/model_config.h"

namespace trainscope::training {
namespace {

// Every field given, none at its LlamaConfig default.
nlohmann::json small_llama() {
  return {{"hidden_size", 64},
          {"intermediate_size", 128},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"vocab_size", 100},
          {"max_position_embeddings", 64},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 500000.0},
          {"tie_word_embeddings", true},
          {"bos_token_id", 5},
          {"eos_token_id", 6},
          {"hidden_act", "silu"}};
}

TEST(LlamaConfigDefaultsTest, EachAbsentFieldTakesLlamaConfigsDefault) {
  using Check = std::function<void(const ModelConfig&)>;
  const std::vector<std::pair<std::string, Check>> fields = {
      {"vocab_size", [](const ModelConfig& c) { EXPECT_EQ(c.vocab_size, 32000); }},
      {"hidden_size", [](const ModelConfig& c) { EXPECT_EQ(c.dim, 4096); }},
      {"intermediate_size", [](const ModelConfig& c) { EXPECT_EQ(c.mlp_dim, 11008); }},
      {"num_hidden_layers", [](const ModelConfig& c) { EXPECT_EQ(c.n_layers, 32); }},
      {"num_attention_heads",
       [](const ModelConfig& c) {
         EXPECT_EQ(c.n_heads, 32);
         EXPECT_EQ(c.head_dim(), 2);  // hidden_size / heads
       }},
      {"num_key_value_heads", [](const ModelConfig& c) { EXPECT_EQ(c.kv_heads(), 4); }},
      {"max_position_embeddings", [](const ModelConfig& c) { EXPECT_EQ(c.max_seq_len, 2048); }},
      {"rms_norm_eps", [](const ModelConfig& c) { EXPECT_EQ(c.norm_eps, 1e-6f); }},
      {"rope_theta", [](const ModelConfig& c) { EXPECT_EQ(c.rope_theta, 10000.0f); }},
      {"tie_word_embeddings", [](const ModelConfig& c) { EXPECT_FALSE(c.tie_embeddings); }},
      {"bos_token_id", [](const ModelConfig& c) { EXPECT_EQ(c.bos_token_id, 1); }},
      {"eos_token_id", [](const ModelConfig& c) { EXPECT_EQ(c.eos_token_id, 2); }},
      {"hidden_act", [](const ModelConfig&) {}},  // silu: accepted, as given
  };
  for (const auto& [field, check] : fields) {
    SCOPED_TRACE(field);
    nlohmann::json j = small_llama();
    ASSERT_TRUE(j.contains(field));
    j.erase(field);
    check(from_hf_config(j, "config.json"));
  }
  // Given, each is read as given.
  const ModelConfig c = from_hf_config(small_llama(), "config.json");
  EXPECT_EQ(c.norm_eps, 1e-5f);
  EXPECT_EQ(c.bos_token_id, 5);
  EXPECT_EQ(c.eos_token_id, 6);
  EXPECT_TRUE(c.tie_embeddings);
}

}  // namespace
}  // namespace trainscope::training
