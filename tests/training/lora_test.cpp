#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/check.h"
#include "base/json_reader.h"
#include "tests/expect_error.h"
#include "tests/kernels/gradcheck.h"
#include "tests/temp_dir.h"
#include "tests/tiny_training.h"
#include "training/adapters.h"
#include "training/llama_model.h"
#include "training/safetensors.h"

namespace trainscope::training {
namespace {
namespace fs = std::filesystem;

// Grouped-query attention and a head size that is not dims / heads, so every
// adapter has its own shape.
ModelConfig small_config() {
  ModelConfig c = model_preset("tiny");
  c.n_layers = 2;
  c.dim = 8;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dims = 6;
  c.mlp_dim = 12;
  c.vocab_size = 11;
  c.max_seq_len = 8;
  return c;
}

LoraConfig every_target(int rank = 3, int layers = 0) {
  LoraConfig l;
  l.rank = rank;
  l.alpha = 5;
  l.layers = layers;
  l.targets = options::parse_lora_targets("q,k,v,o,gate,up,down", "test");
  return l;
}

using ::trainscope::testing::tokens;

template <typename T>
void add_noise(std::span<T> x, uint64_t seed, double scale) {
  const std::vector<double> noise = testing::random_vector(x.size(), seed, scale);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] += static_cast<T>(noise[i]);
}

TEST(LoraLayoutTest, NamesShapesAndOrderArePeftsAndTheModels) {
  const ModelConfig c = small_config();
  const LoraLayout layout(c, every_target(3, 1));
  ASSERT_EQ(layout.adapters().size(), 7u) << "the last layer only";
  const TensorSpec& qa = layout.tensors()[0];
  EXPECT_EQ(qa.name, "base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight");
  EXPECT_EQ(qa.shape, (std::vector<int64_t>{3, 8}));
  const int kb = layout.find("base_model.model.model.layers.1.self_attn.k_proj.lora_B.weight");
  ASSERT_GE(kb, 0);
  EXPECT_EQ(layout.tensors()[kb].shape, (std::vector<int64_t>{12, 3}));
  const LoraAdapter* down = layout.find(1, LoraTarget::kDown);
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->in, 12);
  EXPECT_EQ(LoraLayout::base_tensor_name(*down), "model.layers.1.mlp.down_proj.weight");
  EXPECT_EQ(layout.find(0, LoraTarget::kQ), nullptr);
  EXPECT_EQ(layout.find(1, LoraTarget::kV)->column, 24 + 12);
  EXPECT_EQ(layout.begin_at(1, LoraTarget::kDown), down->a);
  EXPECT_EQ(layout.begin_at(0, LoraTarget::kDown), 0) << "everything of layer 1 follows";
}

TEST(LoraLayoutTest, BadOptionsNameTheFlag) {
  const ModelConfig c = small_config();
  LoraConfig l;
  l.rank = 0;
  EXPECT_TRUE(THROWS_BAD_INPUT(validate_lora(l, c), "--lora-rank must be positive"));
  l = LoraConfig{};
  l.layers = 3;
  EXPECT_TRUE(THROWS_BAD_INPUT(validate_lora(l, c), "--lora-layers 3: the model has 2 layers"));
  l = LoraConfig{};
  l.dropout = 1;
  EXPECT_TRUE(THROWS_BAD_INPUT(validate_lora(l, c), "--lora-dropout"));
  EXPECT_TRUE(THROWS_BAD_INPUT(options::parse_lora_targets("q_proj,qq", "--lora-targets"),
                               "--lora-targets: unknown target module 'qq'"));
  EXPECT_TRUE(
      THROWS_BAD_INPUT(options::parse_lora_targets("q,q_proj", "--lora-targets"), "listed twice"));
  EXPECT_EQ(options::parse_lora_targets("down,q", "x"),
            (std::vector<LoraTarget>{LoraTarget::kQ, LoraTarget::kDown}));
}

// A fresh adapter (B = 0) leaves the model exactly as it was, bit for bit.
TEST(LoraModelTest, FreshAdaptersLeaveTheBaseModelExactly) {
  const ModelConfig c = small_config();
  LlamaModel<float> base(c, 2, 5), adapted(c, 2, 5, {}, every_target());
  base.init_weights(7);
  adapted.init_weights(7);
  adapted.init_adapters(8);
  const std::vector<int32_t> in = tokens(10, c.vocab_size, 0);
  const float* a = base.forward_logits(in.data());
  const float* b = adapted.forward_logits(in.data());
  for (int i = 0; i < 10 * c.vocab_size; ++i) ASSERT_EQ(a[i], b[i]) << i;
  // ...but not an empty one: A is drawn.
  EXPECT_TRUE(std::any_of(adapted.adapters().begin(), adapted.adapters().end(),
                          [](float x) { return x != 0; }));
}

// Only the adapters train: the gradient arena is theirs, and the adapters'
// gradients match finite differences of the whole model's loss (the last
// layer adapted, so backward stops above layer 0; dropout on, its masks
// replayed by resetting the stream).
void expect_adapter_gradient_matches(double dropout) {
  const ModelConfig c = small_config();
  const int B = 2, T = 5;
  LoraConfig lora = every_target(3, 1);
  lora.dropout = dropout;
  LlamaModel<double> model(c, B, T, {}, lora);
  model.init_weights(1);
  model.init_adapters(2);
  add_noise(model.params(), 3, 0.3);
  add_noise(model.adapters(), 4, 0.3);  // B != 0, so dA carries signal
  ASSERT_EQ(model.grads().size(), static_cast<std::size_t>(LoraLayout(c, lora).total()));
  std::vector<int32_t> in = tokens(B * T, c.vocab_size, 0), tg = tokens(B * T, c.vocab_size, 1);
  tg[3] = -1;
  auto training_loss = [&] {
    model.set_dropout_seed(9);
    return model.forward(in.data(), tg.data(), 1.0).loss_sum;
  };
  model.zero_grad();
  training_loss();
  std::vector<int64_t> begins;
  model.backward(in.data(), [&](int64_t b) { begins.push_back(b); });
  std::vector<double> analytic(model.grads().begin(), model.grads().end());
  std::vector<double> x(model.adapters().begin(), model.adapters().end());
  testing::expect_gradient_matches(
      "adapters", x, analytic,
      [&] {
        std::copy(x.begin(), x.end(), model.adapters().begin());
        return training_loss();
      },
      100000, 1e-5, 1e-6);
  ASSERT_FALSE(begins.empty());
  EXPECT_EQ(begins.back(), 0);
  for (std::size_t i = 1; i < begins.size(); ++i) EXPECT_LT(begins[i], begins[i - 1]);
}

TEST(LoraModelTest, AdapterGradientsMatchFiniteDifferences) { expect_adapter_gradient_matches(0); }

TEST(LoraModelTest, AdapterGradientsWithDropoutMatchFiniteDifferences) {
  expect_adapter_gradient_matches(0.3);
}

// Dropout acts on training forwards only: evaluation and inference see the
// adapters whole.
TEST(LoraModelTest, DropoutChangesTrainingForwardsOnly) {
  const ModelConfig c = small_config();
  LoraConfig plain = every_target(), dropped = every_target();
  dropped.dropout = 0.5;
  LlamaModel<float> a(c, 2, 5, {}, plain), b(c, 2, 5, {}, dropped);
  for (auto* m : {&a, &b}) {
    m->init_weights(1);
    m->init_adapters(2);
    add_noise(m->adapters(), 4, 0.5);
  }
  const std::vector<int32_t> in = tokens(10, c.vocab_size, 0), tg = tokens(10, c.vocab_size, 1);
  EXPECT_EQ(a.forward(in.data(), tg.data(), 0.0).loss_sum,
            b.forward(in.data(), tg.data(), 0.0).loss_sum);
  EXPECT_NE(a.forward(in.data(), tg.data(), 0.1).loss_sum,
            b.forward(in.data(), tg.data(), 0.1).loss_sum);
}

// Fused weights compute what base + adapters compute.
TEST(LoraModelTest, FusedWeightsGiveTheAdaptedLogits) {
  const ModelConfig c = small_config();
  const LoraConfig lora = every_target(4);
  LlamaModel<float> adapted(c, 2, 5, {}, lora), fused(c, 2, 5);
  adapted.init_weights(1);
  adapted.init_adapters(2);
  add_noise(adapted.adapters(), 4, 0.2);
  std::copy(adapted.params().begin(), adapted.params().end(), fused.params().begin());
  fuse_adapters(fused.layout(), fused.params(), *adapted.lora_layout(), adapted.adapters(),
                lora.scale());
  const std::vector<int32_t> in = tokens(10, c.vocab_size, 0);
  const std::vector<float> want(adapted.forward_logits(in.data()),
                                adapted.forward_logits(in.data()) + 10 * c.vocab_size);
  const float* got = fused.forward_logits(in.data());
  LlamaModel<float> base(c, 2, 5);
  base.init_weights(1);
  const float* before = base.forward_logits(in.data());
  double moved = 0;
  for (int i = 0; i < 10 * c.vocab_size; ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i]))) << i;
    moved = std::max(moved, double(std::abs(want[i] - before[i])));
  }
  EXPECT_GT(moved, 1e-3) << "the adapters must change the logits for this test to mean anything";
}

TEST(LoraModelTest, LoraFlopsAreBelowFullTrainings) {
  const ModelConfig c = model_preset("seed");
  LoraConfig lora;
  const double full = LlamaModel<float>::train_flops(c, 8, 128);
  const double adapted = LlamaModel<float>::train_flops(c, 8, 128, lora);
  EXPECT_LT(adapted, full * 0.7);
  EXPECT_GT(adapted, full * 0.5);
  lora.layers = 1;
  EXPECT_LT(LlamaModel<float>::train_flops(c, 8, 128, lora), adapted);
}

class AdapterFilesTest : public ::testing::Test {
 protected:
  testing::TempDir dir_{"adapters"};
};

TEST_F(AdapterFilesTest, SaveLoadRoundTripsInPeftLayout) {
  const ModelConfig c = small_config();
  const LoraConfig lora = every_target(3, 1);
  LlamaModel<float> model(c, 1, 4, {}, lora);
  model.init_adapters(5);
  add_noise(model.adapters(), 6, 0.1);
  write_adapter_files(dir_.path(), c, lora, model.adapters(), "base-dir");
  const nlohmann::json config = read_json_file(dir_.path() / kAdapterConfigFile);
  EXPECT_EQ(config["peft_type"], "LORA");
  EXPECT_EQ(config["task_type"], "CAUSAL_LM");
  EXPECT_EQ(config["r"], 3);
  EXPECT_EQ(config["layers_to_transform"], nlohmann::json::array({1}));
  EXPECT_EQ(config["target_modules"].size(), 7u);
  const LoadedAdapters loaded = load_adapters(dir_.path(), c);
  EXPECT_EQ(loaded.config, lora);
  ASSERT_EQ(loaded.weights.size(), model.adapters().size());
  EXPECT_TRUE(std::equal(model.adapters().begin(), model.adapters().end(), loaded.weights.begin()));
}

TEST_F(AdapterFilesTest, AdaptersForAnotherBaseAreRefusedByName) {
  const ModelConfig c = small_config();
  LoraConfig lora = every_target(3);
  const LoraLayout layout(c, lora);
  std::vector<float> w(static_cast<std::size_t>(layout.total()), 0.5f);
  write_adapter_files(dir_.path(), c, lora, w, "base");
  ModelConfig wider = c;
  wider.dim = 16;
  EXPECT_TRUE(THROWS_BAD_INPUT(load_adapters(dir_.path(), wider), "another base model"));
  ModelConfig deeper = c;
  deeper.n_layers = 3;  // layers 0-1 of 3: not the last layers
  lora.layers = 2;
  write_adapter_files(dir_.path(), c, lora, w, "base");
  EXPECT_TRUE(THROWS_BAD_INPUT(load_adapters(dir_.path(), deeper), "layers_to_transform"));
  EXPECT_TRUE(THROWS_BAD_INPUT(load_adapters(dir_.path() / "nowhere", c), "not a directory"));
  // Every layer of a deeper model: names the shallower base does not have.
  LoraConfig all = every_target(3);
  const LoraLayout deep(deeper, all);
  std::vector<float> dw(static_cast<std::size_t>(deep.total()), 0.5f);
  write_adapter_files(dir_.path(), deeper, all, dw, "deeper");
  EXPECT_TRUE(THROWS_BAD_INPUT(load_adapters(dir_.path(), c), "layers.2."));
  EXPECT_TRUE(THROWS_BAD_INPUT(load_adapters(dir_.path(), c), "another base model"));
  fs::remove(dir_.path() / kAdapterWeightsFile);
  EXPECT_TRUE(
      THROWS_BAD_INPUT(load_adapters(dir_.path(), c), "adapter_model.safetensors is missing"));
}

// Issue 25 item 12: a folder whose adapter_config.json disagrees with its
// own tensors is refused as such, not blamed on another base model.
TEST_F(AdapterFilesTest, AFolderThatDisagreesWithItselfSaysSo) {
  const ModelConfig c = small_config();
  const LoraConfig lora = every_target(3);
  const LoraLayout layout(c, lora);
  const std::vector<float> w(static_cast<std::size_t>(layout.total()), 0.5f);
  write_adapter_files(dir_.path(), c, lora, w, "base");
  const fs::path config_file = dir_.path() / kAdapterConfigFile;
  const nlohmann::json written = read_json_file(config_file);
  auto rewrite = [&](const char* key, nlohmann::json value) {
    nlohmann::json j = written;
    j[key] = std::move(value);
    std::ofstream(config_file) << j.dump(2);
  };
  auto expect = [&](const std::string& needle) {
    try {
      load_adapters(dir_.path(), c);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(e.exit_code(), kExitBadInput);
      EXPECT_NE(what.find(needle), std::string::npos) << what;
      EXPECT_NE(what.find("disagrees with itself"), std::string::npos) << what;
      EXPECT_EQ(what.find("another base model"), std::string::npos) << what;
    }
  };
  rewrite("r", 2);
  expect("adapter_config.json says r 2, but adapter_model.safetensors holds rank-3 adapters");
  nlohmann::json six = written["target_modules"];
  six.erase(std::find(six.begin(), six.end(), "v_proj"));
  rewrite("target_modules", six);
  expect("adapter_model.safetensors holds v_proj adapters");
  rewrite("target_modules", {"q_proj"});
  expect(
      "adapter_model.safetensors holds k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj "
      "adapters, which adapter_config.json's target_modules (q_proj) does not name");
}

TEST_F(AdapterFilesTest, ConfigsPeftCouldWriteButWeCannotApplyAreRefused) {
  const ModelConfig c = small_config();
  auto refuse = [&](nlohmann::json j, const std::string& needle) {
    EXPECT_TRUE(THROWS_BAD_INPUT(from_peft_config(j, c, "adapter_config.json"), needle))
        << j.dump();
  };
  nlohmann::json good = to_peft_config(every_target(), c, "base");
  EXPECT_EQ(from_peft_config(good, c, "x"), every_target());
  auto with = [&](const char* key, nlohmann::json v) {
    nlohmann::json j = good;
    j[key] = std::move(v);
    return j;
  };
  refuse(with("r", 0), "'r' is 0; the rank must be positive");
  refuse(with("peft_type", "IA3"), "only LORA");
  refuse(with("bias", "all"), "biases");
  refuse(with("target_modules", {"q_proj", "lm_head"}), "unknown target module 'lm_head'");
  refuse(with("fan_in_fan_out", true), "fan_in_fan_out");
}

}  // namespace
}  // namespace trainscope::training
