// Hugging Face checkpoint directories: F32/F16/BF16, one file or shards with
// an index, written by the project's own writer (no download anywhere), read
// back to the same weights within the format's precision; bad directories
// are errors naming the file and the tensor; `train --init-from` starts from
// them.
#include "training/hf_checkpoint.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include "comm/communicator.h"
#include "base/check.h"
#include "base/json_reader.h"
#include "tests/expect_error.h"
#include "tests/temp_dir.h"
#include "training/llama_model.h"
#include "training/trainer.h"
#include "tests/tiny_training.h"

namespace trainscope::training {
namespace {
namespace fs = std::filesystem;

class HfCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override { model_.init_weights(7); }
  // The model's weights saved as `name` and read back into a fresh arena.
  std::vector<float> round_trip(const std::string& name, const HfSaveOptions& o) {
    save_hf_checkpoint(dir_ / name, config_, model_.layout(), model_.params(), o);
    EXPECT_EQ(read_hf_config(dir_ / name).dim, config_.dim);
    std::vector<float> back(model_.layout().total(), -1.0f);
    load_hf_weights(dir_ / name, model_.layout(), back);
    return back;
  }
  void expect_error(const fs::path& dir, const std::string& needle) {
    std::vector<float> arena(model_.layout().total());
    try {
      load_hf_weights(dir, model_.layout(), arena);
      ADD_FAILURE() << "expected an error mentioning " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_EQ(e.exit_code(), kExitBadInput);
    }
  }

  ModelConfig config_ = model_preset("tiny");
  LlamaModel<float> model_{config_, 2, 8};
  testing::TempDir temp_{"hf"};
  const fs::path dir_ = temp_.path();
};

TEST_F(HfCheckpointTest, F32OneFileAndShardsReadBackExactly) {
  const auto one = round_trip("one", {});
  const auto sharded = round_trip("sharded", {.shards = 3});
  EXPECT_TRUE(fs::exists(dir_ / "sharded" / "model-00003-of-00003.safetensors"));
  EXPECT_TRUE(fs::exists(dir_ / "sharded" / "model.safetensors.index.json"));
  const auto params = model_.params();
  for (std::size_t i = 0; i < params.size(); ++i) {
    ASSERT_EQ(one[i], params[i]) << i;
    ASSERT_EQ(sharded[i], params[i]) << i;
  }
}

// F16 keeps 11 significant bits (and subnormals below 2^-14, spaced 2^-24),
// BF16 8: each weight within half a unit in the last place.
TEST_F(HfCheckpointTest, HalfPrecisionWeightsAreWithinTheirFormatsPrecision) {
  const auto f16 = round_trip("f16", {.dtype = Dtype::kF16, .shards = 2});
  const auto bf16 = round_trip("bf16", {.dtype = Dtype::kBF16});
  const auto params = model_.params();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const double a = std::abs(params[i]);
    ASSERT_LE(std::abs(f16[i] - params[i]), std::max(a * 0x1p-11, 0x1p-25)) << i;
    ASSERT_LE(std::abs(bf16[i] - params[i]), a * 0x1p-8) << i;
  }
}

// A BF16/F16 checkpoint gives the logits of its F32 twin within the format's
// precision: here the largest difference relative to the largest logit.
TEST_F(HfCheckpointTest, HalfPrecisionCheckpointsGiveTheLogitsOfTheirF32Twin) {
  std::vector<int32_t> in(16);
  for (int i = 0; i < 16; ++i) in[i] = (i * 37) % config_.vocab_size;
  const float* l = model_.forward_logits(in.data());
  const std::vector<float> want(l, l + 16 * config_.vocab_size);
  double scale = 0;
  for (float x : want) scale = std::max(scale, std::abs(static_cast<double>(x)));
  for (auto [dtype, tolerance] : {std::pair{Dtype::kF16, 2e-3}, std::pair{Dtype::kBF16, 2e-2}}) {
    const std::string name(dtype_name(dtype));
    save_hf_checkpoint(dir_ / name, config_, model_.layout(), model_.params(), {.dtype = dtype});
    LlamaModel<float> loaded(read_hf_config(dir_ / name), 2, 8);
    load_hf_weights(dir_ / name, loaded.layout(), loaded.params());
    const float* got = loaded.forward_logits(in.data());
    double worst = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
    }
    EXPECT_LE(worst / scale, tolerance) << name;
    EXPECT_GT(worst, 0) << name << ": no rounding at all would mean F32 was written";
  }
}

// Grouped-query attention and an explicit head size survive config.json and
// the weights, as real small Llamas need.
TEST_F(HfCheckpointTest, GroupedQueryConfigsAndWeightsRoundTrip) {
  ModelConfig gqa = config_;
  gqa.n_kv_heads = 2;
  gqa.head_dims = 16;  // 4 heads x 16 = 64-wide q on 32 dims
  LlamaModel<float> m(gqa, 1, 8);
  m.init_weights(3);
  save_hf_checkpoint(dir_ / "gqa", gqa, m.layout(), m.params(), {.shards = 2});
  const ModelConfig back = read_hf_config(dir_ / "gqa");
  EXPECT_EQ(back.kv_heads(), 2);
  EXPECT_EQ(back.head_dim(), 16);
  LlamaModel<float> loaded(back, 1, 8);
  load_hf_weights(dir_ / "gqa", loaded.layout(), loaded.params());
  for (std::size_t i = 0; i < m.params().size(); ++i) ASSERT_EQ(loaded.params()[i], m.params()[i]);
  // Weights of another shape are refused by name.
  std::vector<float> arena(model_.layout().total());
  try {
    load_hf_weights(dir_ / "gqa", model_.layout(), arena);
    FAIL() << "GQA weights loaded into a plain model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("q_proj.weight' has shape [64, 32]"), std::string::npos)
        << e.what();
  }
}

TEST_F(HfCheckpointTest, BadDirectoriesNameTheFileAndTensor) {
  expect_error(dir_, "no weights");
  save_hf_checkpoint(dir_ / "s", config_, model_.layout(), model_.params(), {.shards = 2});
  const fs::path index = dir_ / "s" / "model.safetensors.index.json";
  const nlohmann::json original = read_json_file(index);
  auto rewrite_index = [&](const nlohmann::json& j) { std::ofstream(index) << j.dump(); };

  // A shard the index names that is not there.
  fs::rename(dir_ / "s" / "model-00002-of-00002.safetensors", dir_ / "s" / "moved");
  expect_error(dir_ / "s", "shard model-00002-of-00002.safetensors");
  fs::rename(dir_ / "s" / "moved", dir_ / "s" / "model-00002-of-00002.safetensors");
  // A tensor the index puts in the other shard.
  nlohmann::json wrong = original;
  wrong["weight_map"]["model.embed_tokens.weight"] = "model-00002-of-00002.safetensors";
  rewrite_index(wrong);
  expect_error(dir_ / "s", "tensor 'model.embed_tokens.weight' is in model-00001-of-00002");
  // A shard name that would leave the directory.
  wrong = original;
  wrong["weight_map"]["model.embed_tokens.weight"] = "../elsewhere.safetensors";
  rewrite_index(wrong);
  expect_error(dir_ / "s", "not a file name in the directory");
  // A tensor missing altogether: its shard and its index entries gone.
  wrong = original;
  for (auto it = original["weight_map"].begin(); it != original["weight_map"].end(); ++it) {
    if (it.value() == "model-00002-of-00002.safetensors") wrong["weight_map"].erase(it.key());
  }
  rewrite_index(wrong);
  fs::remove(dir_ / "s" / "model-00002-of-00002.safetensors");
  const auto& tensors = model_.layout().tensors();
  expect_error(dir_ / "s", "missing tensor '" + tensors[tensors.size() / 2].name + "'");
  // A dtype that is not read.
  const fs::path f64 = dir_ / "f64";
  fs::create_directories(f64);
  const std::string header =
      R"({"model.embed_tokens.weight":{"dtype":"F64","shape":[260,32],"data_offsets":[0,66560]}})";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  std::ofstream(f64 / "model.safetensors", std::ios::binary)
      << bytes << header << std::string(66560, '\0');
  expect_error(f64, "dtype F64");
}

// A write flag's dtype reads as a flag, in either case (a header's dtype
// errors name the file and tensor: BadDirectoriesNameTheFileAndTensor).
TEST(DtypeFlagTest, AnyCaseIsReadAndOtherValuesNameTheFlag) {
  EXPECT_EQ(parse_dtype("bf16", "--dtype"), Dtype::kBF16);
  EXPECT_EQ(parse_dtype("f16", "--dtype"), Dtype::kF16);
  EXPECT_EQ(parse_dtype("F32", "--dtype"), Dtype::kF32);
  EXPECT_EQ(parse_dtype("Bf16", "--dtype"), Dtype::kBF16);
  EXPECT_TRUE(THROWS_BAD_INPUT(parse_dtype("XYZ", "--dtype"),
                               "--dtype must be F32, F16 or BF16, got 'XYZ'"));
  EXPECT_TRUE(THROWS_BAD_INPUT(parse_dtype("", "--dtype"), "got ''"));
}

// Issue 25 item 17: a tied model whose files also hold lm_head.weight (as
// some exporters write) loads, as transformers loads it: silently when it
// equals the embedding, with a warning naming both when it does not; the
// embedding is what the model uses. In one file and across shards.
TEST_F(HfCheckpointTest, ATiedModelsFilesMayAlsoHoldTheHead) {
  ModelConfig untied = config_;
  untied.tie_embeddings = false;
  ModelConfig tied = config_;
  tied.tie_embeddings = true;
  const ParamLayout with_head(untied), layout(tied);
  std::vector<float> weights(static_cast<std::size_t>(with_head.total()));
  for (std::size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(i % 97) / 97;
  const TensorSpec& embed = with_head.tensors()[with_head.find("model.embed_tokens.weight")];
  const TensorSpec& head = with_head.tensors()[with_head.find("lm_head.weight")];
  std::copy_n(weights.begin() + embed.offset, embed.numel, weights.begin() + head.offset);
  for (const int shards : {1, 2}) {
    const fs::path same = dir_ / fmt::format("same{}", shards);
    const fs::path other = dir_ / fmt::format("other{}", shards);
    save_hf_checkpoint(same, untied, with_head, weights, {.shards = shards});
    std::ofstream(same / "config.json") << to_hf_config(tied).dump(2);
    std::vector<float> arena(static_cast<std::size_t>(layout.total()), -1.0f);
    ::testing::internal::CaptureStderr();
    load_hf_weights(same, layout, arena);
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << shards;
    EXPECT_TRUE(
        std::equal(arena.begin(), arena.begin() + embed.numel, weights.begin() + embed.offset));
    std::vector<float> differs = weights;
    differs[static_cast<std::size_t>(head.offset)] += 1.0f;
    save_hf_checkpoint(other, untied, with_head, differs, {.shards = shards});
    std::ofstream(other / "config.json") << to_hf_config(tied).dump(2);
    ::testing::internal::CaptureStderr();
    load_hf_weights(other, layout, arena);
    const std::string warning = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(warning.find("trainscope: warning: " + other.string()), std::string::npos) << warning;
    EXPECT_NE(warning.find("lm_head.weight differs from model.embed_tokens.weight"),
              std::string::npos)
        << warning;
    EXPECT_NE(warning.find("the embedding is used"), std::string::npos) << warning;
    EXPECT_EQ(arena[0], weights[static_cast<std::size_t>(embed.offset)]);
  }
}

TEST_F(HfCheckpointTest, TrainingStartsFromPretrainedWeights) {
  auto comm = comm::make_communicator("local");
  options::TrainOptions o = testing::tiny_training(30, 4, 16);
  o.checkpoint_dir = (dir_ / "run").string();
  const auto trained = run_training(o, *comm, stdout);
  // The trainer's step directory is a Hugging Face checkpoint; a BF16 copy too.
  const fs::path step_dir = dir_ / "run" / "step-00000030";
  LlamaModel<float> m(read_hf_config(step_dir), 1, 8);
  load_hf_weights(step_dir, m.layout(), m.params());
  save_hf_checkpoint(dir_ / "bf16", read_hf_config(step_dir), m.layout(), m.params(),
                     {.dtype = Dtype::kBF16, .shards = 2});
  options::TrainOptions fresh = o;
  fresh.steps = 1;
  fresh.checkpoint_dir.clear();
  const double fresh_loss = run_training(fresh, *comm, stdout).steps[0][0].loss;
  for (const fs::path& from : {step_dir, dir_ / "bf16"}) {
    options::TrainOptions pretrained = fresh;
    pretrained.init_from = from.string();
    const auto s = run_training(pretrained, *comm, stdout);
    // Step 0's batch, on weights that learned the corpus for 30 steps.
    EXPECT_LT(s.steps[0][0].loss, fresh_loss - 0.5) << from;
    EXPECT_NEAR(s.steps[0][0].loss, trained.steps[0].back().loss, 0.5) << from;
  }
  options::TrainOptions both = fresh;
  both.init_from = step_dir.string();
  both.resume = (dir_ / "run").string();
  try {
    run_training(both, *comm, stdout);
    FAIL() << "--init-from with --resume ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("give one"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trainscope::training
