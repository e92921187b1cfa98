// The training option table (options/train_option_table.h): one row per
// option, the records derived from it, and reading them back.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <type_traits>
#include <variant>

#include "tests/expect_error.h"
#include "options/train_option_table.h"

namespace trainscope::training {
namespace {

using nlohmann::json;

TEST(OptionTableTest, NamesAreUniqueAndEveryRowIsReachable) {
  std::set<std::string_view> flags, suite, summary;
  for (const options::TrainOption& row : options::train_option_table()) {
    EXPECT_FALSE(row.flag.empty() && row.summary.empty()) << row.suite;
    if (!row.flag.empty()) {
      EXPECT_TRUE(flags.insert(row.flag).second) << row.flag;
      EXPECT_FALSE(row.help.empty()) << row.flag;
    }
    if (!row.suite.empty()) {
      EXPECT_TRUE(suite.insert(row.suite).second) << row.suite;
    }
    if (!row.summary.empty()) {
      EXPECT_TRUE(summary.insert(row.summary).second) << row.summary;
    }
  }
  EXPECT_EQ(options::find_suite_option("comm_dtype")->flag, "--comm-dtype");
  EXPECT_EQ(options::find_summary_option("lora.rank")->suite, "lora_rank");
  EXPECT_EQ(options::find_suite_option("lora_rank")->config_path(), "lora.rank");
  EXPECT_EQ(options::find_suite_option("nonesuch"), nullptr);
}

// The summary's options record keeps the layout summaries have always had.
TEST(OptionTableTest, TheRecordHasTheSummaryLayout) {
  const json r = options::TrainOptions().to_json();
  std::set<std::string> keys;
  for (const auto& [k, v] : r.items()) keys.insert(k);
  // clang-format off
  EXPECT_EQ(keys, (std::set<std::string>{
                      "adam_eps", "allreduce", "batch", "beta1", "beta2", "block", "bucket_mb",
                      "comm_dtype", "data", "engine", "eval_every", "fine_tune", "gemm",
                      "grad_clip", "init_from", "inject_delay", "lora", "lr", "lr_warmup",
                      "min_lr", "mode", "model", "precision", "reduce", "replay_compute",
                      "replay_time_scale", "save_every", "schedule", "seed", "shard",
                      "stall_action", "stall_grace_s", "stall_timeout_s", "steps", "tokenizer",
                      "val_batches", "warmup_steps", "weight_decay", "zero"}));
  // clang-format on
  EXPECT_TRUE(r["lora"].is_null()) << "no adapters under full fine-tuning";
  EXPECT_TRUE(r["inject_delay"].is_null());
  EXPECT_EQ(r["data"]["batching"], "pad");
  EXPECT_EQ(r["data"]["shuffle"], true);
  EXPECT_EQ(r["mode"], "naive");
  EXPECT_EQ(r["comm_dtype"], "fp32");
}

TEST(OptionTableTest, RecordsReadBackTyped) {
  options::TrainOptions o;
  o.fine_tune = options::FineTune::kLora;
  o.lora.rank = 4;
  o.lora.targets = options::parse_lora_targets("q,k", "test");
  o.inject_delay = options::InjectedDelay{1, 50};
  o.comm_dtype = options::CommDtype::kBf16;
  o.data.shuffle = false;
  o.data.data_mode = options::DataMode::kSharded;
  o.bucket_mb = 0.5;
  const json r = o.to_json();
  EXPECT_EQ(r["lora"]["targets"], json({"q_proj", "k_proj"}));
  EXPECT_EQ(r["inject_delay"], "1:50");
  const options::TrainOptions back = options::options_from_record(r);
  EXPECT_EQ(back.to_json(), r);
  EXPECT_EQ(back.comm_dtype, options::CommDtype::kBf16);
  EXPECT_EQ(back.lora.rank, 4);
  // A value of another type (an older writer's) leaves the default.
  EXPECT_EQ(options::options_from_record({{"zero", "one"}, {"batch", 3}}).zero, 0);
  EXPECT_EQ(options::options_from_record({{"zero", "one"}, {"batch", 3}}).batch, 3);
}

// A case's config: suite keys, and the adapters as the summary records them.
TEST(OptionTableTest, CaseConfigsReadBackTyped) {
  const options::TrainOptions o =
      options::options_from_config({{"mode", "sharded"},
                                    {"reduce", "overlap"},
                                    {"bucket_mb", nullptr},
                                    {"data", "x.txt"},
                                    {"fine_tune", "lora"},
                                    {"lora", {{"rank", 16}, {"targets", {"q_proj"}}}},
                                    {"comm_dtype", "bf16"},
                                    {"ranks", 2}});
  EXPECT_EQ(o.data.data_mode, options::DataMode::kSharded);
  EXPECT_EQ(o.reduce, options::ReduceStrategy::kOverlap);
  EXPECT_EQ(o.bucket_mb, options::TrainOptions().bucket_mb) << "null: not set";
  EXPECT_EQ(o.data.source, "x.txt");
  EXPECT_EQ(o.lora.rank, 16);
  EXPECT_EQ(options::lora_targets_list(o.lora.targets), "q_proj");
  EXPECT_EQ(o.comm_dtype, options::CommDtype::kBf16);
}

TEST(OptionTableTest, ValuesAreCheckedAgainstTheirRows) {
  options::TrainOptions o;
  EXPECT_TRUE(
      THROWS_BAD_INPUT(options::set_option_json(*options::find_suite_option("zero"), o, 2, "zero"),
                       "'zero' must be at most 1, got 2"));
  EXPECT_TRUE(THROWS_BAD_INPUT(
      options::set_option_json(*options::find_suite_option("lora_alpha"), o, 0, "lora_alpha"),
      "'lora_alpha' must be positive, got 0"));
  EXPECT_TRUE(THROWS_BAD_INPUT(
      options::set_option_json(*options::find_suite_option("steps"), o, "5", "steps"),
      "'steps' must be an integer"));
  EXPECT_TRUE(THROWS_BAD_INPUT(
      options::set_option_json(*options::find_suite_option("comm_dtype"), o, "fp8", "comm_dtype"),
      "comm_dtype: unknown communication dtype 'fp8' (expected fp32, bf16)"));
  options::set_option_json(*options::find_suite_option("comm_dtype"), o, "bf16", "comm_dtype");
  EXPECT_EQ(options::option_text(*options::find_suite_option("comm_dtype"), o), "bf16");
  EXPECT_FALSE(options::option_is_default(*options::find_suite_option("comm_dtype"), o));
  EXPECT_TRUE(options::option_is_default(*options::find_suite_option("zero"), o));
  o.bucket_mb = 0.001;
  EXPECT_EQ(options::option_text(*options::find_suite_option("bucket_mb"), o), "0.001");
}

// A value other than the default for `row`, whatever its type.
void set_other_than_default(const options::TrainOption& row, options::TrainOptions& o) {
  std::visit(
      [&](const auto& ref) {
        using R = std::decay_t<decltype(ref)>;
        if constexpr (std::is_same_v<R, options::TextRef>) {
          const std::string now = ref.get(o);
          std::string other = row.flag == "--lora-targets"   ? "k_proj"
                              : row.flag == "--inject-delay" ? "1:5"
                                                             : now + "x";
          for (std::string_view c : ref.choices) {
            if (c != now) {
              other = std::string(c);
              break;
            }
          }
          ref.set(o, other, "test");
        } else if constexpr (std::is_same_v<R, options::Ref<bool>>) {
          ref(o) = !ref(o);
        } else if constexpr (std::is_same_v<R, options::Ref<std::string>>) {
          ref(o) += "x";
        } else {
          ref(o) += 2;
        }
      },
      row.ref);
}

// Opt-in (issue 37): an option whose row does not say the PyTorch peer runs
// it is refused on a pytorch case, naming it; a new option is never run
// silently without it by the peer.
TEST(OptionTableTest, ThePeerRunsOnlyTheOptionsItsRowsOptInTo) {
  int refused = 0;
  for (const options::TrainOption& row : options::train_option_table()) {
    if (row.summary == "engine") continue;
    options::TrainOptions o;
    o.engine = options::Engine::kPytorch;
    ASSERT_EQ(options::pytorch_unsupported(o), "");
    set_other_than_default(row, o);
    ASSERT_FALSE(options::option_is_default(row, o)) << row.flag << row.summary;
    const std::string why = options::pytorch_unsupported(o);
    const std::string key(!row.suite.empty()  ? row.suite
                          : !row.flag.empty() ? row.flag
                                              : row.summary);
    if (row.pytorch == nullptr) {
      EXPECT_EQ(why.rfind(key + " = ", 0), 0u) << key << ": " << why;
      ++refused;
    } else if (!why.empty()) {
      EXPECT_EQ(why.rfind(key + " = ", 0), 0u) << key << ": " << why;
    }
  }
  EXPECT_GT(refused, 10);
  options::TrainOptions o;
  o.engine = options::Engine::kPytorch;
  o.zero = 1;
  EXPECT_EQ(options::pytorch_unsupported(o),
            "zero = 1: the PyTorch peer runs plain DDP; ZeRO-1 is not mapped");
  o.zero = 0;
  o.gemm = options::GemmBackend::kOpenBlas;  // silently PyTorch's own GEMMs before
  EXPECT_EQ(options::pytorch_unsupported(o),
            "gemm = openblas: the PyTorch peer has no counterpart for it");
  o.gemm = options::GemmBackend::kAuto;
  o.lr = 1e-3;
  o.data.data_mode = options::DataMode::kSharded;
  EXPECT_EQ(options::pytorch_unsupported(o), "");
}

}  // namespace
}  // namespace trainscope::training
