// The report on all-reduce algorithms and ZeRO-1: one busbw series per
// algorithm with the algorithms' labels, the table of busbw at the largest
// size against Open MPI's default, the memory per rank with and without
// ZeRO-1, and each case's all-reduce in the comparison tables; a suite of
// defaults only has none of them.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "report/algorithms.h"
#include "report/charts.h"
#include "report/findings.h"
#include "report/report.h"
#include "analysis/suite_data.h"
#include "tests/suite_builder.h"

namespace trainscope::report {
namespace {

namespace fs = std::filesystem;
using testing::CaseSpec;
using testing::SuiteSpec;
using testing::SweepSpec;

class AlgorithmsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trainscope-algorithms-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  analysis::SuiteData load(const fs::path& path) {
    auto db = results::ResultsDb::open_for_reading(path);
    return analysis::load_suite(db, analysis::resolve_suite(db, "latest"));
  }
  analysis::SuiteData sweeps(const SweepSpec& spec) {
    testing::build_sweep_db(dir_ / "sweep.db", spec);
    return load(dir_ / "sweep.db");
  }
  analysis::SuiteData train(const SuiteSpec& spec) {
    testing::build_suite_db(dir_ / "train.db", spec);
    return load(dir_ / "train.db");
  }

  fs::path dir_;
};

// As suites/allreduce-algorithms.toml names its cases, with bandwidths in
// known ratios to Open MPI's default.
SweepSpec algorithms_sweep() {
  SweepSpec spec;
  spec.name = "allreduce-algorithms";
  spec.cases = {"allreduce-r2", "allreduce-r2-alg4", "allreduce-r2-ar-shm", "allreduce-r2-ar-hier"};
  spec.repetitions = 3;
  spec.call_noise = 0;
  spec.config = {{"allreduce-r2-alg4", {{"mpi_algorithm", 4}}},
                 {"allreduce-r2-ar-shm", {{"allreduce", "shm"}}},
                 {"allreduce-r2-ar-hier", {{"allreduce", "hier"}}}};
  spec.speed = {
      {"allreduce-r2-alg4", 1.5}, {"allreduce-r2-ar-shm", 2.0}, {"allreduce-r2-ar-hier", 0.5}};
  return spec;
}

TEST_F(AlgorithmsTest, TheBusbwChartHasOneSeriesPerAlgorithm) {
  const auto chart = busbw_chart(sweeps(algorithms_sweep()));
  ASSERT_TRUE(chart);
  EXPECT_EQ(chart->data.size(), 4u);
  for (const char* title :
       {"title 'mpi'", "title 'mpi alg 4 (ring)'", "title 'shm'", "title 'hier'"}) {
    EXPECT_NE(chart->script.find(title), std::string::npos) << title << "\n" << chart->script;
  }
  EXPECT_EQ(chart->script.find("title 'allreduce-r2"), std::string::npos) << chart->script;
}

TEST_F(AlgorithmsTest, BusbwAtTheLargestSizeIsComparedWithOpenMpisDefault) {
  const analysis::SuiteData suite = sweeps(algorithms_sweep());
  const auto rows = algorithm_busbw(suite);
  ASSERT_EQ(rows.size(), 4u);
  const double speeds[] = {1.0, 1.5, 2.0, 0.5};
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].size_bytes, 16 << 20) << rows[i].case_name;
    EXPECT_EQ(rows[i].baseline_case, "allreduce-r2") << rows[i].case_name;
    EXPECT_NEAR(rows[i].ratio, speeds[i], 1e-9) << rows[i].case_name;
    EXPECT_NEAR(rows[i].busbw_gbps, (16 << 20) / ((5.0 + (16 << 20) / 5e3) / speeds[i]) / 1e3,
                1e-9);
  }
  EXPECT_EQ(rows[1].label, "mpi alg 4 (ring)");
  const std::string md = render_markdown({suite});
  EXPECT_NE(md.find("**Bus bandwidth at the largest size per all-reduce algorithm**"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| allreduce-r2-alg4 | mpi alg 4 (ring) | 16.0 MiB | 7.489 | 1.50x | "
                    "allreduce-r2 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| allreduce-r2-ar-hier | hier | 16.0 MiB | 2.496 | 0.50x | allreduce-r2 |"),
            std::string::npos)
      << md;
  // Each case's all-reduce in the comparison table.
  EXPECT_NE(md.find("| case | all-reduce | ranks |"), std::string::npos) << md;
  EXPECT_NE(md.find("| allreduce-r2-ar-shm | shm | 2 |"), std::string::npos) << md;
  const std::string html = render_html({suite}, std::nullopt).html;
  EXPECT_NE(html.find("<h4>Bus bandwidth at the largest size per all-reduce algorithm</h4>"),
            std::string::npos);
  EXPECT_NE(html.find("<td class=\"name\">mpi alg 4 (ring)</td>"), std::string::npos);
}

// A suite of Open MPI's default only reads as before these existed.
TEST_F(AlgorithmsTest, ASuiteOfDefaultsHasNoAlgorithmColumnTableOrSeries) {
  const analysis::SuiteData suite = sweeps(SweepSpec{});
  EXPECT_FALSE(suite_varies_reduction(suite));
  EXPECT_TRUE(algorithm_busbw(suite).empty());
  const auto chart = busbw_chart(suite);
  ASSERT_TRUE(chart);
  EXPECT_NE(chart->script.find("title 'shm'"), std::string::npos) << chart->script;  // case names
  EXPECT_NE(chart->script.find("title 'tcp-l2'"), std::string::npos) << chart->script;
  const std::string md = render_markdown({suite});
  EXPECT_NE(md.find("| case | ranks |"), std::string::npos) << md;
  EXPECT_EQ(md.find("all-reduce algorithm"), std::string::npos) << md;
}

// One process, two sharded ranks, and `third`: a variant of the sharded case.
SuiteSpec naive_fused_and(CaseSpec third) {
  SuiteSpec spec;
  spec.name = "reductions";
  spec.repetitions = 1;
  spec.cases = {{.name = "naive", .mode = "naive", .world_size = 1},
                {.name = "fused", .mode = "sharded"},
                std::move(third)};
  return spec;
}

SuiteSpec zero_suite() {
  return naive_fused_and({.name = "fused-zero1",
                          .mode = "sharded",
                          .config = {{"zero", 1}},
                          .optimizer_state_share = 0.5});
}

TEST_F(AlgorithmsTest, ZeroOneMemoryPerRankBesideTheSameCaseWithoutIt) {
  const analysis::SuiteData suite = train(zero_suite());
  const auto zero = zero_memory(suite);
  ASSERT_EQ(zero.size(), 1u);
  EXPECT_EQ(zero[0].case_name, "fused-zero1");
  EXPECT_EQ(zero[0].peer_case, "fused");
  EXPECT_EQ(zero[0].ranks, 2);
  EXPECT_EQ(zero[0].zero.optimizer_state, 3'000'000);
  EXPECT_EQ(zero[0].peer.optimizer_state, 6'000'000);
  EXPECT_EQ(zero[0].zero.parameters, 3'000'000);
  EXPECT_EQ(zero[0].optimizer_total, 6'000'000);
  const std::string md = render_markdown({suite});
  EXPECT_NE(md.find("**Memory per rank with and without ZeRO-1"), std::string::npos) << md;
  EXPECT_NE(md.find("| fused | off | 2 | 2.9 MiB | 2.9 MiB | 5.7 MiB |"), std::string::npos) << md;
  EXPECT_NE(md.find("| fused-zero1 | ZeRO-1 | 2 | 2.9 MiB | 2.9 MiB | 2.9 MiB |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("fused-zero1: optimizer state per rank = 2.9 MiB (total / N = 2.9 MiB: 5.7 "
                    "MiB over 2 ranks; the total is what each rank of fused holds without ZeRO)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| fused-zero1 | mpi, ZeRO-1 | 2 |"), std::string::npos) << md;
  const std::string html = render_html({suite}, std::nullopt).html;
  EXPECT_NE(html.find("optimizer state per rank = 2.9 MiB (total / N = 2.9 MiB"),
            std::string::npos);
}

// A case whose gradients travelled as bf16 is named so in the comparison
// tables' all-reduce column, beside the same case in fp32 (its comm figures
// on the same row), though every case all-reduced with Open MPI.
TEST_F(AlgorithmsTest, ABf16CaseIsLabelledBesideItsFp32Case) {
  SuiteSpec spec;
  spec.name = "reductions";
  spec.repetitions = 1;
  spec.cases = {
      {.name = "fused", .mode = "sharded"},
      {.name = "fused-bf16",
       .mode = "sharded",
       .comm_share = 0.1,
       .config = {{"comm_dtype", "bf16"}}},
  };
  const analysis::SuiteData suite = train(spec);
  EXPECT_TRUE(suite_varies_reduction(suite));
  EXPECT_EQ(case_reduction(*suite.find_case("fused-bf16")).label(), "mpi, bf16");
  EXPECT_EQ(case_reduction(*suite.find_case("fused")).label(), "mpi");
  const std::string md = render_markdown({suite});
  EXPECT_NE(md.find("| fused-bf16 | mpi, bf16 | 2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| fused (baseline) | mpi | 2 |"), std::string::npos) << md;
}

// The loss finding does not put a bf16-on-the-wire case's difference from
// one process down to the order of sums alone: its gradients were rounded.
TEST_F(AlgorithmsTest, TheLossFindingNamesTheBf16RoundingOfTheGradients) {
  const SuiteSpec spec = naive_fused_and({.name = "fused-comm-bf16",
                                          .mode = "sharded",
                                          .loss_offset = 0.0005,
                                          .config = {{"comm_dtype", "bf16"}}});
  bool found = false;
  for (const auto& f : suite_findings(train(spec))) {
    if (f.id != "loss") continue;
    found = true;
    EXPECT_NE(f.answer.find("in fused-comm-bf16 at step"), std::string::npos) << f.answer;
    EXPECT_NE(f.answer.find("fused-comm-bf16's gradients were rounded to bf16 for the "
                            "all-reduce (--comm-dtype)"),
              std::string::npos)
        << f.answer;
    EXPECT_EQ(f.answer.find("only the order"), std::string::npos) << f.answer;
  }
  EXPECT_TRUE(found);
}

TEST_F(AlgorithmsTest, WithoutACaseToCompareOnlyThePerRankFigureIsShown) {
  SuiteSpec spec = zero_suite();
  spec.cases.erase(spec.cases.begin() + 1);  // no "fused" without ZeRO
  const auto zero = zero_memory(train(spec));
  ASSERT_EQ(zero.size(), 1u);
  EXPECT_EQ(zero[0].peer_case, "");
  EXPECT_EQ(zero[0].optimizer_total, -1);
  EXPECT_NE(zero[0].sentence().find("no case of the suite runs without ZeRO"), std::string::npos)
      << zero[0].sentence();
  EXPECT_EQ(zero[0].sentence().find("total / N"), std::string::npos) << zero[0].sentence();
}

}  // namespace
}  // namespace trainscope::report
