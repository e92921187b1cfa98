// Fine-tuning end to end in one process: a pretrained checkpoint, LoRA over
// it (what trains, what is held, what is saved), resume, and bad input.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "comm/communicator.h"
#include "base/json_reader.h"
#include "tests/expect_error.h"
#include "tests/temp_dir.h"
#include "tests/tiny_training.h"
#include "training/adapters.h"
#include "training/checkpoint.h"
#include "training/llama_model.h"
#include "training/trainer.h"

namespace trainscope::training {
namespace {
namespace fs = std::filesystem;
using kernels::MemoryCategory;

class FineTuneTest : public ::testing::Test {
 protected:
  // A few steps of pre-training on stories: the base every test adapts.
  void SetUp() override {
    options::TrainOptions o = testing::tiny_training(3, 4, 32);
    o.checkpoint_dir = (dir_.path() / "base").string();
    run_training(o, *comm_);
    base_ = dir_.path() / "base" / "step-00000003";
  }
  options::TrainOptions lora_options(int64_t steps) const {
    options::TrainOptions o = testing::tiny_training(steps, 4, 32, "builtin:instruct?docs=64");
    o.model.clear();
    o.init_from = base_.string();
    o.fine_tune = options::FineTune::kLora;
    o.lora.targets = options::parse_lora_targets("q,v,down", "test");
    return o;
  }
  std::vector<double> losses(const results::RunSummary& s) {
    std::vector<double> out;
    for (const auto& r : s.steps.at(0)) out.push_back(r.loss);
    return out;
  }

  std::unique_ptr<comm::Communicator> comm_ = comm::make_communicator("local");
  testing::TempDir dir_{"finetune"};
  fs::path base_;
};

// Only adapters train: the summary says how many, the gradient arena and
// the AdamW state are theirs alone, and a reduction moves their bytes.
TEST_F(FineTuneTest, LoraHoldsStateAndMovesGradientsForAdaptersOnly) {
  const ModelConfig c = model_preset("tiny");
  const LoraConfig lora = lora_options(1).lora;
  const int64_t trainable = LoraLayout(c, lora).total();
  const auto s = run_training(lora_options(4), *comm_);
  EXPECT_EQ(s.trainable_parameters, trainable);
  EXPECT_EQ(s.parameters, ParamLayout(c).total() + trainable);
  const auto& peaks = s.ranks.at(0).tracked_peak_by_category;
  EXPECT_EQ(peaks[MemoryCategory::kOptimizerState], 2 * 4 * trainable);
  EXPECT_EQ(peaks[MemoryCategory::kGradients], 4 * trainable);
  EXPECT_EQ(s.steps[0][1].comm_bytes, 4 * trainable);
  EXPECT_EQ(s.options["fine_tune"], "lora");
  EXPECT_EQ(s.options["lora"]["targets"], nlohmann::json({"q_proj", "v_proj", "down_proj"}));
  // Full fine-tuning of the same base, for contrast: everything trains.
  options::TrainOptions full = lora_options(2);
  full.fine_tune = options::FineTune::kFull;
  const auto f = run_training(full, *comm_);
  EXPECT_EQ(f.trainable_parameters, ParamLayout(c).total());
  EXPECT_EQ(f.ranks.at(0).tracked_peak_by_category[MemoryCategory::kOptimizerState],
            2 * 4 * ParamLayout(c).total());
}

// The run says what trains, as mlx-lm does.
TEST_F(FineTuneTest, HeaderSaysTheTrainableShare) {
  options::TrainOptions o = lora_options(1);
  o.quiet = false;
  char* text = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&text, &size);
  run_training(o, *comm_, out);
  std::fclose(out);
  const std::string printed(text, size);
  std::free(text);
  EXPECT_NE(printed.find("Trainable parameters: "), std::string::npos) << printed;
  EXPECT_NE(printed.find("LoRA rank 8 alpha 16 on q_proj,v_proj,down_proj of 2 layers"),
            std::string::npos)
      << printed;
}

// Checkpoints are PEFT adapter folders; a resumed run continues the same
// run bit for bit, and a resume that would change what trains is refused.
TEST_F(FineTuneTest, AdapterCheckpointsResumeTheSameRun) {
  const fs::path ckpt = dir_.path() / "adapters";
  const auto whole = run_training(lora_options(6), *comm_);
  options::TrainOptions first = lora_options(3);
  first.checkpoint_dir = ckpt.string();
  first.save_every = 1;
  run_training(first, *comm_);
  for (const char* step : {"step-00000001", "step-00000002", "step-00000003"}) {
    EXPECT_TRUE(fs::exists(ckpt / step / kAdapterWeightsFile)) << step;
    EXPECT_TRUE(fs::exists(ckpt / step / kAdapterConfigFile)) << step;
    EXPECT_FALSE(fs::exists(ckpt / step / "model.safetensors")) << step << ": the base is frozen";
  }
  const LoadedAdapters latest = load_adapters(ckpt, model_preset("tiny"));
  EXPECT_EQ(latest.dir.filename(), "step-00000003");

  options::TrainOptions second = lora_options(6);
  second.init_from.clear();
  second.resume = ckpt.string();
  const auto resumed = run_training(second, *comm_);
  const auto a = losses(whole), b = losses(resumed);
  ASSERT_EQ(b.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(b[i], a[3 + i]) << "step " << 3 + i;

  options::TrainOptions changed = second;
  changed.fine_tune = options::FineTune::kFull;
  EXPECT_TRUE(THROWS_BAD_INPUT(run_training(changed, *comm_), "fine_tune"));
  changed = second;
  changed.lora.rank = 4;
  EXPECT_TRUE(THROWS_BAD_INPUT(run_training(changed, *comm_), "was saved with lora"));
}

TEST_F(FineTuneTest, BadLoraOptionsNameTheFlag) {
  options::TrainOptions o = lora_options(1);
  o.lora.rank = -1;
  EXPECT_TRUE(THROWS_BAD_INPUT(run_training(o, *comm_), "--lora-rank must be positive"));
  o = lora_options(1);
  o.lora.layers = 5;
  EXPECT_TRUE(THROWS_BAD_INPUT(run_training(o, *comm_), "--lora-layers 5: the model has 2 layers"));
}

}  // namespace
}  // namespace trainscope::training
