// `trainscope generate` end to end: from a checkpoint the trainer wrote,
// greedy generation is deterministic, streams text and ends with the
// summary lines; bad input is exit 2 with the reason.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "kernels/storage.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"
#include "training/hf_checkpoint.h"

namespace trainscope {
namespace {
namespace fs = std::filesystem;
using testing::run_trainscope;

class GenerateCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A tiny model with room for a chat prompt, trained a little on the pirate
    // pairs; its vocabulary is padded beyond the byte tokenizer's 257 ids,
    // which generation must never sample.
    std::ofstream(dir_ / "config.json")
        << R"({"hidden_size":32,"intermediate_size":64,"num_attention_heads":4,)"
           R"("num_key_value_heads":2,"num_hidden_layers":2,"vocab_size":600,)"
           R"("max_position_embeddings":160})";
    const auto trained = run_trainscope(
        "train --model " + (dir_ / "config.json").string() +
        " --steps 20 --batch 4 --block 128 --data 'builtin:instruct?docs=200' --quiet"
        " --checkpoint-dir " +
        (dir_ / "ckpt").string());
    ASSERT_EQ(trained.exit_code, 0) << trained.output;
    model_ = (dir_ / "ckpt" / "step-00000020").string();
  }
  testing::TempDir temp_{"generate"};
  const fs::path dir_ = temp_.path();
  std::string model_;
};

TEST_F(GenerateCommandTest, GreedyIsDeterministicAndEndsWithTheSummary) {
  const std::string args = "generate --model " + model_ +
                           " --chat --prompt 'Tell this like a pirate: Hello, my friend.'"
                           " --max-tokens 24 --temp 0";
  const auto a = run_trainscope(args), b = run_trainscope(args);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const std::string text_a = a.output.substr(0, a.output.find("=========="));
  const std::string text_b = b.output.substr(0, b.output.find("=========="));
  EXPECT_EQ(text_a, text_b);
  EXPECT_NE(a.output.find("Prompt: 66 tokens, "), std::string::npos) << a.output;
  EXPECT_NE(a.output.find("Generation: "), std::string::npos) << a.output;
  EXPECT_NE(a.output.find("tokens-per-sec"), std::string::npos) << a.output;
  EXPECT_NE(a.output.find("Peak memory: "), std::string::npos) << a.output;
  // Sampling with a seed repeats itself too.
  const std::string sampled = "generate --model " + model_ +
                              " --prompt 'Once' --max-tokens 16 --temp 0.8 --top-p 0.9 --seed 3";
  auto text = [](const std::string& out) { return out.substr(0, out.find("==========")); };
  const auto s1 = run_trainscope(sampled), s2 = run_trainscope(sampled);
  ASSERT_EQ(s1.exit_code, 0) << s1.output;
  EXPECT_EQ(text(s1.output), text(s2.output));
  EXPECT_NE(text(s1.output), text(run_trainscope(sampled + "1").output));  // seed 31
}

TEST_F(GenerateCommandTest, BadInputIsExitTwoWithTheReason) {
  auto expect_bad = [&](const std::string& args, const std::string& needle) {
    const auto r = run_trainscope("generate " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << args << "\n" << r.output;
  };
  expect_bad("--model " + (dir_ / "nowhere").string() + " --prompt hi", "no config.json");
  expect_bad("--model " + model_ + " --prompt hi --top-p 0", "--top-p: must be in (0, 1], got 0");
  expect_bad("--model " + model_ + " --prompt hi --max-tokens 500", "positions; the model has 160");
  expect_bad("--model " + model_ + " --prompt ''", "nothing to continue");
  // Without --max-tokens it stops where the context ends instead of refusing.
  const auto fits = run_trainscope("generate --model " + model_ + " --prompt " +
                                   std::string(150, 'a') + " --temp 0");
  EXPECT_EQ(fits.exit_code, 0) << fits.output;
  EXPECT_NE(fits.output.find("Prompt: 150 tokens"), std::string::npos) << fits.output;
}

// LoRA adapters trained on the model: generate --adapters and the fused
// checkpoint say the same thing; fuse never overwrites, and adapters meant
// for another base are refused by name.
TEST_F(GenerateCommandTest, AdaptersAndTheirFusedCheckpointGenerateAlike) {
  const std::string adapters = (dir_ / "lora").string(), fused = (dir_ / "fused").string();
  const auto tuned =
      run_trainscope("train --init-from " + model_ +
                     " --fine-tune lora --lora-targets q,v,o,down --lr 1e-2"
                     " --steps 8 --batch 4 --block 128 --data 'builtin:instruct?docs=200' --quiet"
                     " --checkpoint-dir " +
                     adapters);
  ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
  const auto f =
      run_trainscope("fuse --model " + model_ + " --adapters " + adapters + " --out " + fused);
  ASSERT_EQ(f.exit_code, 0) << f.output;
  EXPECT_NE(f.output.find("fused 8 LoRA adapters (rank 8, scale 2)"), std::string::npos)
      << f.output;
  auto text = [](const std::string& out) { return out.substr(0, out.find("==========")); };
  const std::string prompt =
      " --chat --prompt 'Tell this like a pirate: Hello.' --max-tokens 24 --temp 0";
  const auto with =
      run_trainscope("generate --model " + model_ + " --adapters " + adapters + prompt);
  const auto merged = run_trainscope("generate --model " + fused + prompt);
  ASSERT_EQ(with.exit_code, 0) << with.output;
  EXPECT_EQ(text(with.output), text(merged.output));
  // ...and not what the base says: the merge did something.
  EXPECT_NE(text(with.output), text(run_trainscope("generate --model " + model_ + prompt).output));

  const auto again =
      run_trainscope("fuse --model " + model_ + " --adapters " + adapters + " --out " + fused);
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_NE(again.output.find("already exists"), std::string::npos) << again.output;
  const auto not_adapters =
      run_trainscope("generate --model " + model_ + " --adapters " + model_ + " --prompt hi");
  EXPECT_EQ(not_adapters.exit_code, 2) << not_adapters.output;
  EXPECT_NE(not_adapters.output.find("not a LoRA adapter folder"), std::string::npos);
  // A base with wider layers: same tensor names, other shapes.
  std::ofstream(dir_ / "wide.json")
      << R"({"hidden_size":48,"intermediate_size":64,"num_attention_heads":4,)"
         R"("num_key_value_heads":2,"num_hidden_layers":2,"vocab_size":600,)"
         R"("max_position_embeddings":160})";
  ASSERT_EQ(run_trainscope("train --model " + (dir_ / "wide.json").string() +
                           " --steps 1 --batch 2 --block 16 --quiet --checkpoint-dir " +
                           (dir_ / "wide").string())
                .exit_code,
            0);
  const auto other = run_trainscope("fuse --model " + (dir_ / "wide" / "step-00000001").string() +
                                    " --adapters " + adapters + " --out " + (dir_ / "f2").string());
  EXPECT_EQ(other.exit_code, 2) << other.output;
  EXPECT_NE(other.output.find("another base model"), std::string::npos) << other.output;
  EXPECT_FALSE(fs::exists(dir_ / "f2")) << "nothing written";
}

// Item 6: a NaN weight makes the logits NaN. That is a failure (exit 1)
// naming the step and the first non-finite tensor, not text of NUL bytes.
TEST(GenerateFaultsTest, NonFiniteLogitsExitOneNamingTheStepAndTheTensor) {
  testing::TempDir dir("generate");
  const training::ModelConfig config = training::model_preset("tiny");
  const training::ParamLayout layout(config);
  kernels::Buffer<float> params(layout.total(), kernels::MemoryCategory::kParameters);
  const auto& norm = layout.tensors()[layout.find("model.layers.1.input_layernorm.weight")];
  std::fill_n(params.data() + norm.offset, norm.numel, std::nanf(""));
  training::save_hf_checkpoint(dir / "nan", config, layout, params.span());
  const auto r = run_trainscope("generate --model " + dir.file("nan") +
                                " --prompt hello --max-tokens 8 --temp 0");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("non-finite logits (NaN) at step 1 (prompt token 1 of 5)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("first non-finite weight: 'model.layers.1.input_layernorm.weight' "
                          "(32 of 32 values)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find('\0'), std::string::npos) << "NUL bytes printed";
}

}  // namespace
}  // namespace trainscope
