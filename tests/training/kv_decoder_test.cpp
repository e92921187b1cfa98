// The KV-cache decoder gives, position by position, the logits the whole-
// sequence forward gives (plain, grouped-query and tied models); sampling is
// greedy at temperature 0, seeded otherwise, and top_p narrows the choice.
#include "training/kv_decoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "base/check.h"
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

// Only the first rows of the output (the tokenizer's ids of a padded
// vocabulary): the same logits for them as the whole output gives.
TEST(KvDecoderTest, FewerLogitRowsAreTheFirstRowsOfTheWholeOutput) {
  const ModelConfig c = model_preset("tiny");
  LlamaModel<float> model(c, 1, 4);
  model.init_weights(3);
  KvDecoder whole(c, model.params(), 4), head(c, model.params(), 4, 100);
  EXPECT_EQ(head.logit_rows(), 100);
  EXPECT_EQ(whole.logit_rows(), c.vocab_size);
  for (int32_t token : {5, 17, 200}) {
    const float* all = whole.step(token);
    const float* first = head.step(token);
    for (int v = 0; v < 100; ++v) ASSERT_EQ(first[v], all[v]) << "token " << token << " row " << v;
  }
}

// A nucleus wider than the first ordered head of the vocabulary (64): draws
// land exactly in the nucleus a full sort gives, beyond that head too.
TEST(SampleTokenTest, AWideNucleusIsTheFullSortsNucleus) {
  std::vector<float> logits(1000);
  for (int i = 0; i < 1000; ++i) logits[i] = 0.001f * static_cast<float>((i * 37) % 1000);
  const float top_p = 0.5f;
  std::vector<std::pair<double, int32_t>> sorted;
  double sum = 0;
  const float mx = *std::max_element(logits.begin(), logits.end());
  for (int i = 0; i < 1000; ++i) {
    sorted.push_back({std::exp(static_cast<double>(logits[i] - mx)), i});
    sum += sorted.back().first;
  }
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  std::set<int32_t> nucleus;
  double kept = 0;
  for (std::size_t n = 0; n == 0 || kept < top_p * sum; ++n) {
    kept += sorted[n].first;
    nucleus.insert(sorted[n].second);
  }
  ASSERT_GT(nucleus.size(), 256u) << "wide enough to need the head to grow twice";
  std::mt19937_64 rng(3);
  std::set<int32_t> drawn;
  for (int i = 0; i < 5000; ++i) {
    const int32_t t = sample_token(logits, 1.0f, top_p, rng);
    ASSERT_TRUE(nucleus.contains(t)) << t;
    drawn.insert(t);
  }
  EXPECT_GT(drawn.size(), nucleus.size() * 9 / 10) << "draws reach the whole nucleus";
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
