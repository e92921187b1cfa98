// The report on fine-tuning: per case the step time, the gradient bytes per
// step, the parameters that train and memory by category, what the second
// rank saves for full and for LoRA, the loss curves of all the cases in one
// chart, and the loss finding comparing only cases that train alike; a
// suite whose cases all train alike has no fine-tune tables.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "report/charts.h"
#include "report/findings.h"
#include "report/finetune.h"
#include "report/report.h"
#include "analysis/suite_data.h"
#include "tests/suite_builder.h"
#include "tests/temp_dir.h"

namespace trainscope::report {
namespace {

namespace fs = std::filesystem;
using testing::CaseSpec;
using testing::SuiteSpec;

// As the finetune suite records its LoRA cases' settings (suites/
// suite_config.h, options::lora_options_json).
const nlohmann::json kLora = {{"fine_tune", "lora"},
                              {"lora",
                               {{"rank", 8},
                                {"alpha", 16.0},
                                {"dropout", 0.0},
                                {"layers", 0},
                                {"targets", {"q_proj", "v_proj"}}}}};

// suites/finetune.toml's four cases, without noise: full steps take 100 ms
// on one rank and 80 on two, LoRA 60 and 40; LoRA trains 1% of the 3M
// parameters, and learns slower (its losses 2 higher).
SuiteSpec finetune_suite() {
  SuiteSpec spec;
  spec.name = "finetune";
  spec.repetitions = 1;
  spec.step_noise = 0;
  spec.steps = 20;
  spec.cases = {
      {.name = "naive-r1-fused-full",
       .mode = "naive",
       .world_size = 1,
       .step_time_s = 0.10,
       .comm_share = 0,
       .trainable_parameters = 3'000'000},
      {.name = "naive-r1-fused-lora",
       .mode = "naive",
       .world_size = 1,
       .step_time_s = 0.06,
       .comm_share = 0,
       .loss_offset = 2,
       .config = kLora,
       .trainable_parameters = 30'000},
      {.name = "sharded-r2-fused-full",
       .mode = "sharded",
       .step_time_s = 0.08,
       .trainable_parameters = 3'000'000},
      {.name = "sharded-r2-fused-lora",
       .mode = "sharded",
       .step_time_s = 0.04,
       .comm_share = 0.05,
       .loss_offset = 2,
       .config = kLora,
       .trainable_parameters = 30'000},
  };
  return spec;
}

class FineTuneTest : public ::testing::Test {
 protected:
  analysis::SuiteData load(const SuiteSpec& spec) {
    return testing::build_and_load_suite(dir_ / "finetune.db", spec);
  }

  trainscope::testing::TempDir dir_{"finetune-report"};
};

TEST_F(FineTuneTest, EachCaseHasItsTimeTrafficTrainableShareAndMemory) {
  const analysis::SuiteData suite = load(finetune_suite());
  ASSERT_TRUE(suite_varies_fine_tune(suite));
  const auto rows = fine_tune_rows(suite);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].label, "full");
  EXPECT_EQ(rows[1].label, "LoRA r8, alpha 16, q_proj,v_proj");
  EXPECT_NEAR(rows[3].step_median_s, 0.04, 1e-12);
  EXPECT_EQ(rows[3].parameters, 3'000'000);
  EXPECT_EQ(rows[3].trainable_parameters, 30'000);
  EXPECT_NEAR(rows[3].trainable_share(), 0.01, 1e-12);
  EXPECT_NEAR(rows[2].trainable_share(), 1.0, 1e-12);
  // One fused all-reduce of fp32 gradients: 4 bytes a trainable parameter.
  EXPECT_EQ(rows[2].comm_bytes_per_step, 12'000'000);
  EXPECT_EQ(rows[3].comm_bytes_per_step, 120'000);
  EXPECT_DOUBLE_EQ(rows[3].comm_bytes_per_trainable(), 4.0);
  // One rank counts what its reduction would move, though it sends nothing.
  EXPECT_EQ(rows[1].comm_bytes_per_step, 120'000);
  using kernels::MemoryCategory;
  EXPECT_EQ(rows[3].memory[MemoryCategory::kOptimizerState], 240'000);
  EXPECT_EQ(rows[2].memory[MemoryCategory::kOptimizerState], 24'000'000);
  EXPECT_EQ(rows[3].memory[MemoryCategory::kParameters], 12'000'000);

  const std::string md = render_markdown({suite});
  EXPECT_NE(md.find("**Full fine-tuning vs LoRA: time, gradient traffic, parameters and memory "
                    "per rank"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| case | fine-tune | ranks | step median ms | tokens/s | comm bytes/step | "
                    "bytes per trainable | parameters | trainable | trainable share | memory: "
                    "parameters | memory: gradients | memory: optimizer state | memory: "
                    "activations |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| sharded-r2-fused-lora | LoRA r8, alpha 16, q\\_proj,v\\_proj | 2 | 40.0 | "),
            std::string::npos)
      << md;
  EXPECT_NE(md.find(" | 117.2 KiB | 4.00 | 3.000M | 0.030M | 1.000% | 11.4 MiB | 117.2 KiB | "
                    "234.4 KiB | 4.8 MiB |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find(" | 11.4 MiB | 4.00 | 3.000M | 3.000M | 100.000% | 11.4 MiB | 11.4 MiB | "
                    "22.9 MiB | 4.8 MiB |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| naive-r1-fused-lora | LoRA r8, alpha 16, q\\_proj,v\\_proj | 1 | 60.0 | "),
            std::string::npos)
      << md;
  EXPECT_NE(md.find(" | 117.2 KiB | 4.00 | 3.000M | 0.030M | 1.000% |"), std::string::npos) << md;
  const std::string html = render_html({suite}, std::nullopt).html;
  EXPECT_NE(
      html.find("<td class=\"name\">LoRA r8, alpha 16, q_proj,v_proj</td><td>2</td><td>40.0</td>"),
      std::string::npos);
}

TEST_F(FineTuneTest, TheSecondRankSavesTimeForFullAndForLora) {
  const analysis::SuiteData suite = load(finetune_suite());
  const auto savings = rank_savings(suite);
  ASSERT_EQ(savings.size(), 2u);
  EXPECT_EQ(savings[0].label, "full");
  EXPECT_EQ(savings[0].one_rank_case, "naive-r1-fused-full");
  EXPECT_EQ(savings[0].case_name, "sharded-r2-fused-full");
  EXPECT_EQ(savings[0].steps, 20);
  EXPECT_NEAR(savings[0].one_rank_wall_s, 2.0, 1e-9);
  EXPECT_NEAR(savings[0].wall_s, 1.6, 1e-9);
  EXPECT_NEAR(savings[0].time_saved(), 0.2, 1e-9);
  EXPECT_NEAR(savings[0].speedup(), 1.25, 1e-9);
  // Each against the one rank that trains as it does, not the other method.
  EXPECT_EQ(savings[1].one_rank_case, "naive-r1-fused-lora");
  EXPECT_EQ(savings[1].case_name, "sharded-r2-fused-lora");
  EXPECT_NEAR(savings[1].time_saved(), 1 - 0.8 / 1.2, 1e-9);

  const std::string md = render_markdown({suite});
  EXPECT_NE(md.find("**What the second rank saves, per fine-tune"), std::string::npos) << md;
  EXPECT_NE(md.find("| full | naive-r1-fused-full | 2.00 | sharded-r2-fused-full | 2 | 1.60 | "
                    "1.25x | 20.0% |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| LoRA r8, alpha 16, q\\_proj,v\\_proj | naive-r1-fused-lora | 1.20 | "
                    "sharded-r2-fused-lora | 2 | 0.80 | 1.50x | 33.3% |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("full: 20 steps in 1.60 s on 2 ranks vs 2.00 s on one, time saved 20.0%."),
            std::string::npos)
      << md;
}

// The train and validation curves of every case in one chart; the loss
// finding compares each data-parallel case with the one process that trains
// the same weights (LoRA's losses are 2 higher here, and the ranks' losses
// are the one process's).
TEST_F(FineTuneTest, LossCurvesOverlaidAndComparedWithinAFineTune) {
  const analysis::SuiteData suite = load(finetune_suite());
  const auto chart = loss_chart(suite);
  ASSERT_TRUE(chart);
  EXPECT_EQ(chart->data.size(), 8u);
  for (const auto& c : finetune_suite().cases) {
    for (const char* series : {" train'", " validation'"}) {
      EXPECT_NE(chart->script.find("title '" + c.name + series), std::string::npos)
          << c.name << series << "\n"
          << chart->script;
    }
  }
  bool found = false;
  for (const auto& f : suite_findings(suite)) {
    if (f.id != "loss") continue;
    found = true;
    EXPECT_NE(f.answer.find("Over 2 data-parallel case(s) at the same global batch as the one "
                            "process that trains as each does (naive-r1-fused-full, "
                            "naive-r1-fused-lora), the largest difference from one process's "
                            "loss is 0 "),
              std::string::npos)
        << f.answer;
    EXPECT_NE(f.answer.find("only the order of floating-point sums differs"), std::string::npos)
        << f.answer;
  }
  EXPECT_TRUE(found);
}

// A case whose configuration does not say (LoRA through extra_args, or
// recorded before the key existed) is read from its trainer's options.
TEST_F(FineTuneTest, TheFineTuneOfACaseWithoutTheKeyComesFromItsSummary) {
  SuiteSpec spec = finetune_suite();
  for (auto& c : spec.cases) {
    if (c.config.contains("fine_tune")) {
      c.options = c.config;
      c.config = {{"extra_args", {"--fine-tune", "lora"}}};
    }
  }
  const analysis::SuiteData suite = load(spec);
  EXPECT_EQ(case_fine_tune(*suite.find_case("naive-r1-fused-lora")).label(),
            "LoRA r8, alpha 16, q_proj,v_proj");
  EXPECT_EQ(case_fine_tune(*suite.find_case("naive-r1-fused-full")).label(), "full");
  EXPECT_EQ(fine_tune_rows(suite).size(), 4u);
}

TEST_F(FineTuneTest, ASuiteThatTrainsOneWayHasNoFineTuneTables) {
  SuiteSpec spec = finetune_suite();
  spec.cases.erase(spec.cases.begin() + 3);
  spec.cases.erase(spec.cases.begin() + 1);
  const analysis::SuiteData suite = load(spec);
  EXPECT_FALSE(suite_varies_fine_tune(suite));
  EXPECT_TRUE(fine_tune_rows(suite).empty());
  EXPECT_TRUE(rank_savings(suite).empty());
  const std::string md = render_markdown({suite});
  EXPECT_EQ(md.find("Full fine-tuning vs LoRA"), std::string::npos) << md;
  EXPECT_EQ(md.find("What the second rank saves"), std::string::npos) << md;
}

}  // namespace
}  // namespace trainscope::report
