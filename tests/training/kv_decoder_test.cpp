// The KV-cache decoder gives, position by position, the logits the whole-
// sequence forward gives (plain, grouped-query and tied models); sampling is
// greedy at temperature 0, seeded otherwise, and top_p narrows the choice.
#include "training/kv_decoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "kernels/check.h"
#include "training/llama_model.h"

namespace trainscope::training {
namespace {

void expect_decoder_matches_forward(const ModelConfig& c) {
  const int T = 12;
  LlamaModel<float> model(c, 1, T);
  model.init_weights(5);
  // Larger weights than the init, so attention is far from uniform.
  for (float& p : model.params()) p *= 4.0f;
  std::vector<int32_t> in(T);
  for (int i = 0; i < T; ++i) in[i] = (i * 31 + 7) % c.vocab_size;
  const float* full = model.forward_logits(in.data());
  KvDecoder decoder(c, model.params(), T);
  for (int t = 0; t < T; ++t) {
    const float* got = decoder.step(in[t]);
    double worst = 0, scale = 0;
    for (int v = 0; v < c.vocab_size; ++v) {
      const double want = full[int64_t{t} * c.vocab_size + v];
      worst = std::max(worst, std::abs(got[v] - want));
      scale = std::max(scale, std::abs(want));
    }
    ASSERT_LE(worst, 1e-4 * (1 + scale)) << "position " << t;
  }
  EXPECT_EQ(decoder.position(), T);
  EXPECT_THROW(decoder.step(0), Error);  // the cache is full
}

TEST(KvDecoderTest, LogitsFollowTheFullForwardPositionByPosition) {
  expect_decoder_matches_forward(model_preset("tiny"));
}

TEST(KvDecoderTest, GroupedQueryAndTiedModelsToo) {
  ModelConfig c = model_preset("tiny");
  c.n_kv_heads = 2;
  c.head_dims = 16;
  c.tie_embeddings = true;
  expect_decoder_matches_forward(c);
}

TEST(KvDecoderTest, BadSizesAndTokensAreErrors) {
  const ModelConfig c = model_preset("tiny");
  LlamaModel<float> model(c, 1, 4);
  EXPECT_THROW(KvDecoder(c, model.params(), c.max_seq_len + 1), Error);
  KvDecoder d(c, model.params(), 4);
  EXPECT_THROW(d.step(c.vocab_size), Error);
  EXPECT_THROW(d.step(-1), Error);
}

TEST(SampleTokenTest, GreedySeededAndNucleus) {
  std::mt19937_64 rng(1);
  const std::vector<float> logits = {1.0f, 3.0f, 2.9f, -1.0f};
  EXPECT_EQ(sample_token(logits, 0.0f, 1.0f, rng), 1);
  // top_p small enough keeps only the most likely token.
  for (int i = 0; i < 50; ++i) EXPECT_EQ(sample_token(logits, 1.0f, 0.1f, rng), 1);
  // Full nucleus: the two likely tokens come up about equally, the unlikely rarely.
  std::map<int32_t, int> counts;
  for (int i = 0; i < 2000; ++i) ++counts[sample_token(logits, 1.0f, 1.0f, rng)];
  EXPECT_GT(counts[1], 700);
  EXPECT_GT(counts[2], 600);
  EXPECT_LT(counts[3], 60);
  // The same seed, the same draws.
  std::mt19937_64 a(7), b(7);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(sample_token(logits, 0.8f, 0.9f, a), sample_token(logits, 0.8f, 0.9f, b));
  }
}

}  // namespace
}  // namespace trainscope::training
