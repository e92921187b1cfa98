// Results across commits: per revision figures with intervals, and the change
// points of a planted slowdown named by the first revision after it.
#include "check/history.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "results/results_db.h"
#include "tests/run_command.h"
#include "tests/suite_builder.h"

namespace trainscope::check {
namespace {

namespace fs = std::filesystem;

class HistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("trainscope-history-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // 16 revisions r01..r16 of the reductions suite, 3 repetitions each; from
  // r09 on every step is `slowdown` times slower.
  std::vector<analysis::SuiteData> revisions(double slowdown) {
    const fs::path db = dir_ / fmt::format("history-{}.db", slowdown);
    for (int r = 1; r <= 16; ++r) {
      auto spec = testing::reductions_suite();
      spec.repetitions = 3;
      spec.seed = static_cast<unsigned>(r);
      spec.run_noise = 0.01;
      spec.git_revision = fmt::format("r{:02d}", r);
      spec.slowdown = r >= 9 ? slowdown : 1.0;
      testing::build_suite_db(db, spec);
    }
    auto reader = results::ResultsDb::open_for_reading(db);
    std::vector<analysis::SuiteData> out;
    for (int64_t id : analysis::resolve_suites(reader, "all"))
      out.push_back(analysis::load_suite(reader, id));
    db_ = db;
    return out;
  }

  fs::path dir_, db_;
};

TEST_F(HistoryTest, APlantedSlowdownIsOneChangeNamedByItsFirstRevision) {
  const auto suites = revisions(1.3);
  EXPECT_EQ(revision_count(suites), 16u);
  const auto history = build_history(suites);
  ASSERT_FALSE(history.empty());
  for (const CaseHistory& h : history) {
    SCOPED_TRACE(h.case_name);
    ASSERT_EQ(h.points.size(), 16u);
    EXPECT_EQ(h.points[0].revision, "r01");
    EXPECT_EQ(h.points[0].repetitions, 3);
    EXPECT_TRUE(h.points[0].step_time_s.has_interval());
    EXPECT_LE(h.points[0].step_time_s.low, h.points[0].step_time_s.estimate);
    ASSERT_EQ(h.changes.size(), 1u);
    EXPECT_EQ(h.changes[0].first_revision, "r09");
    EXPECT_NEAR(h.changes[0].test.median_after / h.changes[0].test.median_before, 1.3, 0.05);
  }
  const std::string text = history_text(history);
  EXPECT_NE(text.find("step time changed at revision r09 (first after the change"),
            std::string::npos)
      << text;
  EXPECT_NE(history_markdown(history).find("| **change** |"), std::string::npos);
  // End to end: the command prints the same.
  const auto cli = testing::run_trainscope("history --db " + testing::shell_quote(db_.string()));
  EXPECT_EQ(cli.exit_code, 0) << cli.output;
  EXPECT_NE(cli.output.find("changed at revision r09"), std::string::npos) << cli.output;
}

TEST_F(HistoryTest, AnUnchangedSeriesHasNoChangePoint) {
  for (const CaseHistory& h : build_history(revisions(1.0))) {
    EXPECT_TRUE(h.changes.empty()) << h.case_name << "\n" << history_text({h});
  }
}

}  // namespace
}  // namespace trainscope::check
