// Issue 25 item 10: sizes checked before anything is allocated. A model
// config or a LoRA rank far beyond the machine's memory is bad input naming
// the field and the bytes, not "out of memory" in the middle of the setup.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/expect_error.h"
#include "training/llama_model.h"
#include "training/lora.h"
#include "training/model_config.h"

namespace trainscope::training {
namespace {

// A Llama config.json with `vocab` tokens (70 TB of parameters at
// 2147483647: beyond any machine).
nlohmann::json config_with_vocab(long long vocab) {
  return {{"hidden_size", 4096},    {"intermediate_size", 11008}, {"num_attention_heads", 32},
          {"num_hidden_layers", 2}, {"vocab_size", vocab},        {"max_position_embeddings", 64}};
}

TEST(ModelSizeTest, AVocabularyBeyondTheMachinesMemoryNamesTheFieldAndTheBytes) {
  EXPECT_TRUE(THROWS_BAD_INPUT(from_hf_config(config_with_vocab(2147483647), "huge.json"),
                               "huge.json: vocab_size 2147483647 x hidden_size 4096 needs "
                               "70368744144896 bytes"));
  EXPECT_TRUE(THROWS_BAD_INPUT(from_hf_config(config_with_vocab(2147483647), "huge.json"),
                               "of this machine's memory"));
  EXPECT_NO_THROW(from_hf_config(config_with_vocab(32000), "llama.json"));
}

TEST(ModelSizeTest, ALoraRankAboveTheSmallestAdaptedDimensionIsAnError) {
  const ModelConfig tiny = model_preset("tiny");  // dims 32, kv 32, mlp 64
  LoraConfig lora;                                // q_proj, v_proj: [32, 32]
  lora.rank = 32;
  EXPECT_NO_THROW(validate_lora(lora, tiny));
  lora.rank = 33;
  EXPECT_TRUE(THROWS_BAD_INPUT(validate_lora(lora, tiny),
                               "--lora-rank 33: above 32, the smallest dimension of the adapted "
                               "projections"));
  lora.rank = 2147483647;
  EXPECT_TRUE(THROWS_BAD_INPUT(validate_lora(lora, tiny), "--lora-rank 2147483647: above 32"));
}

// Weights that fit can still have activations that do not: a vocabulary of
// a million at 64M tokens a batch is 256 TB of logits, refused before any
// of the model is allocated.
TEST(ModelSizeTest, ActivationsBeyondTheMachinesMemoryAreRefusedBeforeAllocating) {
  ModelConfig c = model_preset("tiny");
  c.dim = 8;
  c.mlp_dim = 16;
  c.vocab_size = 1'000'000;
  EXPECT_TRUE(THROWS_BAD_INPUT((LlamaModel<float>(c, 1'000'000, 64)),
                               "1000000 rows x 64 tokens (vocab_size 1000000) needs"));
}

}  // namespace
}  // namespace trainscope::training
