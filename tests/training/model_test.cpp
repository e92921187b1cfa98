#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/adamw.h"
#include "base/check.h"
#include "tests/kernels/gradcheck.h"
#include "training/llama_model.h"
#include "tests/tiny_training.h"

namespace trainscope::training {
namespace {

ModelConfig fd_config() {
  ModelConfig c = model_preset("tiny");
  c.n_layers = 2;
  c.dim = 8;
  c.n_heads = 2;
  c.mlp_dim = 12;
  c.vocab_size = 11;
  c.max_seq_len = 8;
  return c;
}

using ::trainscope::testing::tokens;

// Where one backward's gradient-ready hook said gradients became final.
std::vector<int64_t> ready_begins(const ModelConfig& c) {
  LlamaModel<float> model(c, 1, 4);
  model.init_weights(3);
  std::vector<int32_t> in = tokens(4, c.vocab_size, 0), tg = tokens(4, c.vocab_size, 1);
  model.forward(in.data(), tg.data(), 0.25);
  std::vector<int64_t> begins;
  model.backward(in.data(), [&](int64_t begin) { begins.push_back(begin); });
  return begins;
}

// Grouped-query attention (2 kv heads for 4 query heads) with a head size
// that is not dims / heads, as small Llamas have it.
ModelConfig gqa_config() {
  ModelConfig c = fd_config();
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dims = 6;  // q is 24 wide on 8 dims; k and v 12
  return c;
}

void expect_whole_model_gradient_matches(const ModelConfig& c) {
  const int B = 2, T = 5;
  LlamaModel<double> model(c, B, T);
  model.init_weights(1);
  // Larger weights than the 0.02 init so every path carries signal.
  std::vector<double> noise = testing::random_vector(model.params().size(), 2, 0.3);
  for (std::size_t i = 0; i < noise.size(); ++i) model.params()[i] += noise[i];
  std::vector<int32_t> in = tokens(B * T, c.vocab_size, 0), tg = tokens(B * T, c.vocab_size, 1);
  tg[3] = -1;  // a masked position

  model.zero_grad();
  const ForwardResult r = model.forward(in.data(), tg.data(), 1.0);
  ASSERT_EQ(r.predicted, B * T - 1);
  model.backward(in.data());
  std::vector<double> analytic(model.grads().begin(), model.grads().end());
  std::vector<double> x(model.params().begin(), model.params().end());
  auto loss = [&] {
    std::copy(x.begin(), x.end(), model.params().begin());
    return model.forward(in.data(), tg.data(), 0.0).loss_sum;
  };
  testing::expect_gradient_matches("params", x, analytic, loss, 100000, 1e-5, 1e-6);
}

TEST(LlamaModelTest, WholeModelGradientMatchesFiniteDifferences) {
  expect_whole_model_gradient_matches(fd_config());
}

TEST(LlamaModelTest, GroupedQueryAttentionGradientMatchesFiniteDifferences) {
  const ModelConfig c = gqa_config();
  const ParamLayout layout(c);
  const TensorSpec& k = layout.tensors()[layout.find("model.layers.0.self_attn.k_proj.weight")];
  EXPECT_EQ(k.shape, (std::vector<int64_t>{12, 8}));
  const TensorSpec& o = layout.tensors()[layout.find("model.layers.0.self_attn.o_proj.weight")];
  EXPECT_EQ(o.shape, (std::vector<int64_t>{8, 24}));
  expect_whole_model_gradient_matches(c);
}

// Tied: no lm_head tensor; the embedding's gradient gathers the head's and
// the lookup's, and becomes final only when backward ends.
TEST(LlamaModelTest, TiedEmbeddingsGradientMatchesFiniteDifferences) {
  ModelConfig c = gqa_config();
  c.tie_embeddings = true;
  const ParamLayout tied(c), untied(gqa_config());
  EXPECT_EQ(tied.find("lm_head.weight"), -1);
  EXPECT_EQ(tied.lm_head(), tied.embed());
  EXPECT_EQ(tied.total(), untied.total() - int64_t{c.vocab_size} * c.dim);
  expect_whole_model_gradient_matches(c);

  const std::vector<int64_t> begins = ready_begins(c);
  EXPECT_EQ(begins.front(), tied.final_norm());
  EXPECT_EQ(begins.back(), 0);
  for (std::size_t i = 1; i < begins.size(); ++i) EXPECT_LT(begins[i], begins[i - 1]);
}

// With as many kv heads as heads, grouped-query attention is the plain model:
// the same config said either way gives the same loss, bit for bit.
TEST(LlamaModelTest, AsManyKvHeadsAsHeadsIsPlainAttention) {
  ModelConfig plain = fd_config(), spelled = fd_config();
  spelled.n_kv_heads = plain.n_heads;
  spelled.head_dims = plain.dim / plain.n_heads;
  LlamaModel<float> a(plain, 2, 5), b(spelled, 2, 5);
  a.init_weights(4);
  b.init_weights(4);
  std::vector<int32_t> in = tokens(10, plain.vocab_size, 0), tg = tokens(10, plain.vocab_size, 1);
  EXPECT_EQ(a.forward(in.data(), tg.data(), 0.0).loss_sum,
            b.forward(in.data(), tg.data(), 0.0).loss_sum);
}

TEST(LlamaModelTest, GradReadyHookWalksTheArenaBackwards) {
  const ModelConfig c = fd_config();
  const ParamLayout layout(c);
  const std::vector<int64_t> begins = ready_begins(c);
  // One call per tensor, in reverse arena order: every tensor's offset once.
  ASSERT_EQ(begins.size(), layout.tensors().size() - 3u * c.n_layers)
      << "q/k/v and gate/up are fused";
  EXPECT_EQ(begins.front(), layout.lm_head());
  EXPECT_EQ(begins[1], layout.final_norm());
  EXPECT_EQ(begins[2], layout.layer(c.n_layers - 1).down);
  EXPECT_EQ(begins.back(), 0);
  for (std::size_t i = 1; i < begins.size(); ++i) EXPECT_LT(begins[i], begins[i - 1]);
}

TEST(LlamaModelTest, InitialLossIsNearLogVocab) {
  const ModelConfig c = model_preset("tiny");
  LlamaModel<float> model(c, 4, 32);
  model.init_weights(42);
  std::vector<int32_t> in = tokens(4 * 32, 257, 0), tg = tokens(4 * 32, 257, 5);
  const ForwardResult r = model.forward(in.data(), tg.data(), 0.0);
  const double mean = r.loss_sum / r.predicted;
  EXPECT_NEAR(mean, std::log(c.vocab_size), 0.03 * std::log(c.vocab_size));
}

TEST(LlamaModelTest, OverfitsOneBatch) {
  const ModelConfig c = model_preset("tiny");
  const int B = 2, T = 16;
  LlamaModel<float> model(c, B, T);
  model.init_weights(7);
  std::vector<float> m(model.params().size()), v(model.params().size());
  std::vector<int32_t> in = tokens(B * T, 257, 0), tg = tokens(B * T, 257, 9);
  kernels::AdamWParams hp;
  hp.lr = 1e-2f;
  hp.weight_decay = 0.0f;
  double first = 0, last = 0;
  for (int step = 1; step <= 150; ++step) {
    model.zero_grad();
    const ForwardResult r = model.forward(in.data(), tg.data(), 1.0 / (B * T));
    model.backward(in.data());
    kernels::adamw_update(model.params().data(), model.grads().data(), m.data(), v.data(), m.size(),
                          hp, step);
    (step == 1 ? first : last) = r.loss_sum / r.predicted;
  }
  EXPECT_GT(first, 5.0);
  EXPECT_LT(last, 0.05) << "one batch should be memorised";
}

TEST(LlamaModelTest, BadShapesAndTokensAreErrors) {
  ModelConfig c = model_preset("tiny");
  EXPECT_THROW(LlamaModel<float>(c, 1, c.max_seq_len + 1), Error);
  EXPECT_THROW(LlamaModel<float>(c, 0, 4), Error);
  ModelConfig bad = c;
  bad.n_heads = 3;  // does not divide 32
  EXPECT_THROW(LlamaModel<float>(bad, 1, 4), Error);
  LlamaModel<float> model(c, 1, 4);
  std::vector<int32_t> in = {1, 2, c.vocab_size, 3};
  try {
    model.forward(in.data(), nullptr, 0.0);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("column 2"), std::string::npos) << e.what();
  }
}

TEST(LlamaModelTest, FlopsMatchTheIssueFigureForSeed) {
  // One step of seed at batch 4 x block 512 is about 203 GFLOP.
  const double flops = LlamaModel<float>::train_flops(model_preset("seed"), 4, 511);
  EXPECT_NEAR(flops / 1e9, 203, 3);
}

// The fused head (head_and_loss) in chunks of 3 rows gives what one chunk of
// every row gives: the same loss and gradients, up to the order of sums.
TEST(ModelTest, TheHeadInChunksIsTheHeadWhole) {
  const ModelConfig c = gqa_config();
  const int B = 2, T = 5;
  const std::vector<int32_t> in = tokens(B * T, c.vocab_size, 0),
                             tg = tokens(B * T, c.vocab_size, 1);
  auto pass = [&](int chunk_rows) {
    LlamaModel<double> model(c, B, T);
    model.init_weights(7);
    model.set_head_chunk_rows(chunk_rows);
    model.zero_grad();
    const ForwardResult r = model.forward(in.data(), tg.data(), 1.0 / (B * T));
    model.backward(in.data());
    return std::pair(r.loss_sum, std::vector<double>(model.grads().begin(), model.grads().end()));
  };
  const auto [whole_loss, whole] = pass(B * T);
  const auto [chunked_loss, chunked] = pass(3);
  EXPECT_NEAR(chunked_loss, whole_loss, 1e-12 * std::abs(whole_loss));
  ASSERT_EQ(chunked.size(), whole.size());
  double worst = 0;
  for (std::size_t i = 0; i < whole.size(); ++i) {
    worst = std::max(worst, std::abs(chunked[i] - whole[i]) / (std::abs(whole[i]) + 1e-12));
  }
  EXPECT_LT(worst, 1e-9);
  EXPECT_NE(chunked, std::vector<double>(whole.size(), 0.0));
}

}  // namespace
}  // namespace trainscope::training
