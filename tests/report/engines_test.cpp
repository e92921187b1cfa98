// The report's trainscope vs PyTorch table: each PyTorch case beside the
// trainscope case configured alike, the ratio of their tokens/s, and whether
// their losses followed each other (within 1e-4 relative) or where they part.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "report/engines.h"
#include "report/report.h"
#include "analysis/suite_data.h"
#include "tests/suite_builder.h"
#include "tests/temp_dir.h"

namespace trainscope::report {
namespace {

namespace fs = std::filesystem;
using testing::CaseSpec;
using testing::SuiteSpec;

SuiteSpec engines_suite(double pytorch_loss_offset) {
  SuiteSpec spec;
  spec.name = "vs-pytorch";
  spec.repetitions = 3;
  const nlohmann::json ts = {{"engine", "trainscope"}}, pt = {{"engine", "pytorch"}};
  spec.cases = {
      {.name = "r1-trainscope",
       .mode = "naive",
       .world_size = 1,
       .step_time_s = 0.05,
       .config = ts},
      {.name = "r1-pytorch",
       .mode = "naive",
       .world_size = 1,
       .step_time_s = 0.10,
       .loss_offset = pytorch_loss_offset,
       .config = pt},
      {.name = "r2-trainscope",
       .mode = "sharded",
       .world_size = 2,
       .step_time_s = 0.04,
       .config = ts},
      {.name = "r2-pytorch", .mode = "sharded", .world_size = 2, .step_time_s = 0.02, .config = pt},
      {.name = "lonely", .mode = "naive", .world_size = 1, .threads = 2},
  };
  return spec;
}

class EnginesTest : public ::testing::Test {
 protected:
  analysis::SuiteData load(const SuiteSpec& spec) {
    return testing::build_and_load_suite(dir_ / "engines.db", spec);
  }
  trainscope::testing::TempDir dir_{"engines-report"};
};

TEST_F(EnginesTest, PairsAlikeCasesWithTheRatioOfTheirMedians) {
  const analysis::SuiteData suite = load(engines_suite(0));
  const auto pairs = engine_pairs(suite);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].trainscope->name, "r1-trainscope");
  EXPECT_EQ(pairs[0].pytorch->name, "r1-pytorch");
  EXPECT_EQ(pairs[1].trainscope->name, "r2-trainscope");
  const Table t = engine_pairs_table(suite);
  ASSERT_EQ(t.rows.size(), 2u);
  // The ratio is of the cases' own medians, whatever the noise made them.
  const analysis::CaseFigures a = analysis::case_figures(*pairs[0].trainscope),
                              b = analysis::case_figures(*pairs[0].pytorch);
  EXPECT_EQ(t.rows[0][4], format_number(a.tokens_per_s / b.tokens_per_s, 2) + "x");
  EXPECT_GT(a.tokens_per_s / b.tokens_per_s, 1.0);
  EXPECT_EQ(t.rows[0][5], "3/3");
  EXPECT_NE(t.rows[0][6].find("follow"), std::string::npos) << t.rows[0][6];
  // First in both reports.
  const std::string md = render_markdown({suite});
  EXPECT_LT(md.find("trainscope vs PyTorch"), md.find("Baseline:")) << md;
}

TEST_F(EnginesTest, LossesThatPartSayWhere) {
  const analysis::SuiteData suite = load(engines_suite(0.01));
  const Table t = engine_pairs_table(suite);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_NE(t.rows[0][6].find("part at step 0"), std::string::npos) << t.rows[0][6];
  EXPECT_NE(t.rows[1][6].find("follow"), std::string::npos) << t.rows[1][6];
}

TEST(EngineLosses, WithinToleranceFollowsAndNaNNeverDoes) {
  results::RunSummary a, b;
  a.steps = {{}};
  b.steps = {{}};
  for (int k = 0; k < 50; ++k) {
    a.steps[0].push_back({.step = k, .loss = 5.0 - 0.01 * k});
    b.steps[0].push_back({.step = k, .loss = (5.0 - 0.01 * k) * (1 + 0.5 * kEngineLossTolerance)});
  }
  LossAgreement l = compare_losses(a, b);
  EXPECT_EQ(l.steps, 50);
  EXPECT_EQ(l.first_over, -1);
  EXPECT_NEAR(l.worst_rel, 0.5 * kEngineLossTolerance, 1e-9);
  b.steps[0][31].loss *= 1 + 3 * kEngineLossTolerance;
  b.steps[0][40].loss = std::nan("");
  l = compare_losses(a, b);
  EXPECT_EQ(l.first_over, 31);
  EXPECT_EQ(l.worst_step, 40);
  EXPECT_FALSE(compare_losses(a, results::RunSummary{}).comparable);
}

}  // namespace
}  // namespace trainscope::report
