// builtin:instruct: pirate instruction pairs, deterministic, in chat form,
// with the substitutions applied, a validation split of other sentences, and a
// model that learns the style.
#include "training/data/instruct.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "comm/communicator.h"
#include "training/data/stories.h"
#include "training/model_config.h"
#include "training/trainer.h"
#include "tests/tiny_training.h"

namespace trainscope::training {
namespace {

TEST(InstructTest, PiratePairsAreChatsWithTheSubstitutions) {
  std::string a, b;
  generate_instruction(42, 7, &a);
  generate_instruction(42, 7, &b);
  EXPECT_EQ(a, b);  // a pure function of (seed, index)
  const PiratePair pair = pirate_pair(42, 7);
  EXPECT_EQ(a, "<|user|>\nTell this like a pirate: " + pair.sentence + "\n<|assistant|>\n" +
                   pair.pirate + "\n");
  EXPECT_EQ(to_pirate("Hello, my friend, the money is yours and you are old."),
            "Ahoy, me matey, th' doubloons be yours an' ye be ol'. Arr!");
  EXPECT_EQ(to_pirate("The boy and the girl stop looking."),
            "Th' lad an' th' lass avast lookin'. Arr!");
}

TEST(InstructTest, VariedPairsWithRewrittenAnswers) {
  std::set<std::string> train;
  for (int64_t i = 0; i < 200; ++i) {
    train.insert(pirate_pair(42, i).sentence);
    // Every response is rewritten: no pair's answer is its sentence.
    EXPECT_NE(pirate_pair(42, i).pirate, pirate_pair(42, i).sentence + " Arr!") << i;
  }
  EXPECT_GT(train.size(), 150u);
}

// Validation measures sentences the model never trained on: at the default
// docs=20000 the splits share none, and each holds exactly the pairs its
// documentation promises (drawn often enough to see every one).
TEST(InstructTest, TheSplitsShareNoSentence) {
  for (const uint64_t seed : {uint64_t{42}, uint64_t{1234}}) {
    std::set<std::string> train, valid;
    for (int64_t i = 0; i < 300'000; ++i) train.insert(pirate_pair(seed, i).sentence);
    for (int64_t i = 0; i < 20'000; ++i) {
      valid.insert(pirate_pair(seed, kValidationStoryBase + i).sentence);
    }
    int64_t shared = 0;
    for (const std::string& v : valid) shared += train.count(v);
    EXPECT_EQ(shared, 0) << "seed " << seed;
    EXPECT_EQ(static_cast<int64_t>(train.size()), kInstructTrainPairs) << "seed " << seed;
    EXPECT_EQ(static_cast<int64_t>(valid.size()), kInstructValidPairs) << "seed " << seed;
  }
}

// A tiny model trained on the pairs learns the style: its loss falls well
// below where it started, on the validation split too.
TEST(InstructTest, ATinyModelLearnsTheStyle) {
  auto comm = comm::make_communicator("local");
  options::TrainOptions o =
      testing::tiny_training(60, 8, 64, "builtin:instruct?docs=2000&valid_docs=64");
  o.eval_every = 60;
  const auto s = run_training(o, *comm, stdout);
  ASSERT_EQ(s.steps[0].size(), 60u);
  EXPECT_LT(s.steps[0].back().loss, s.steps[0].front().loss - 2.0);
  ASSERT_FALSE(s.val.empty());
  EXPECT_LT(s.val.back().loss, s.steps[0].front().loss - 2.0);

  // The answers alone (--mask-prompt; prompts are about 100 bytes, so a
  // longer block): their loss falls too.
  o.data.mask_prompt = true;
  ModelConfig longer = model_preset("tiny");
  longer.max_seq_len = 192;
  const auto config = std::filesystem::temp_directory_path() /
                      ("trainscope_instruct_" + std::to_string(::getpid()) + ".json");
  std::ofstream(config) << to_hf_config(longer).dump();
  o.model = config.string();
  o.block = 192;
  const auto answers = run_training(o, *comm, stdout);
  ASSERT_EQ(answers.steps[0].size(), 60u);
  EXPECT_LT(answers.steps[0].back().loss, answers.steps[0].front().loss - 2.0);
  // A block the prompts fill leaves nothing to learn: said, not a NaN.
  o.block = 64;
  try {
    run_training(o, *comm, stdout);
    FAIL() << "a batch of masked targets trained";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("do the prompts fill --block 64"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove(config);
}

}  // namespace
}  // namespace trainscope::training
