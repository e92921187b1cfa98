// The gate's own faults a hostile test found (issue 34), each end to end:
// a baseline's negative threshold, a directory as the baseline, a config
// difference inside a list, calibration's target checked before its runs
// and a calibration of a case that never ran, history too short to decide
// and a revision name that would reach the terminal raw.
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/check/check_fixture.h"

namespace trainscope::check {
namespace {

TEST_F(CheckTest, ABaselineWithANegativeThresholdIsRefused) {
  const std::string a = db("a.db", honest(1));
  ASSERT_EQ(
      run_trainscope("check --db " + q(a) + " --save-baseline " + q(dir_ / "b.json")).exit_code, 0);
  auto j = nlohmann::json::parse(read(dir_ / "b.json"));
  j["threshold_pct"] = -5;
  std::ofstream(dir_ / "b.json") << j.dump();
  const auto r = run_trainscope("check --db " + q(a) + " --baseline " + q(dir_ / "b.json"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("threshold_pct' is -5"), std::string::npos) << r.output;
}

TEST_F(CheckTest, ADirectoryAsTheBaselineIsNamedSo) {
  const std::string a = db("a.db", honest(1));
  fs::create_directories(dir_ / "dir");
  const auto r = run_trainscope("check --db " + q(a) + " --baseline " + q(dir_ / "dir"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("it is a directory"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("not valid JSON"), std::string::npos) << r.output;
}

TEST_F(CheckTest, AConfigDifferenceInAListShowsBothLists) {
  auto base = honest(1), cur = honest(2);
  for (auto& c : base.cases) c.config["extra_args"] = nlohmann::json::array();
  for (auto& c : cur.cases) c.config["extra_args"] = {"--grad-clip", "1"};
  const auto r =
      run_trainscope("check --db " + q(db("c.db", cur)) + " --baseline " + q(db("b.db", base)));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("at '/config/extra_args': baseline [], current [\"--grad-clip\",\"1\"]"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("(absent), current (absent)"), std::string::npos) << r.output;
}

// CI checks the stored gate baseline in its own clone: a model file read
// from another directory is the same configuration (it failed CI: the
// baseline named /work/wt34/suites/gate-model.json, the check /check/...);
// another file is not.
TEST_F(CheckTest, AModelFileInAnotherCheckoutIsTheSameConfiguration) {
  auto base = honest(1), moved = honest(2), other = honest(3);
  for (auto& c : base.cases) c.model = "/work/wt34/suites/gate-model.json";
  for (auto& c : moved.cases) c.model = "/check/work/main/suites/gate-model.json";
  for (auto& c : other.cases) c.model = "/check/work/main/suites/small-model.json";
  const std::string b = db("b.db", base);
  const auto same = run_trainscope("check --exact-only --db " + q(db("m.db", moved)) +
                                   " --baseline " + q(b));
  EXPECT_EQ(same.exit_code, 0) << same.output;
  const auto differs = run_trainscope("check --exact-only --db " + q(db("o.db", other)) +
                                      " --baseline " + q(b));
  EXPECT_EQ(differs.exit_code, 2) << differs.output;
  EXPECT_NE(differs.output.find("baseline \"gate-model.json\", current \"small-model.json\""),
            std::string::npos)
      << differs.output;
}

// The speed gate checks the gate suite's exact figures only: its timings
// are compared paired, never against the stored baseline.
TEST_F(CheckTest, ExactOnlyLeavesTimingsOutAndStillCatchesAFigure) {
  const std::string a = db("a.db", honest(1));
  auto slow = honest(2);
  slow.slowdown = 2;
  const auto timed = run_trainscope("check --db " + q(db("s.db", slow)) + " --baseline " + q(a));
  ASSERT_EQ(timed.exit_code, 1) << timed.output;  // same machine: timings compared
  const auto exact =
      run_trainscope("check --exact-only --db " + q(dir_ / "s.db") + " --baseline " + q(a));
  EXPECT_EQ(exact.exit_code, 0) << exact.output;
  EXPECT_NE(exact.output.find("timings not compared (--exact-only)"), std::string::npos)
      << exact.output;
  auto fat = honest(3);
  fat.memory_factor = 2;
  EXPECT_EQ(run_trainscope("check --exact-only --db " + q(db("f.db", fat)) + " --baseline " + q(a))
                .exit_code,
            1);
}

// A suite file of one tiny case, for the calibration end to end.
std::string tiny_suite(const fs::path& dir, const std::string& extra) {
  const fs::path path = dir / "tiny.toml";
  std::ofstream(path) << "name = \"tiny\"\nrepetitions = 2\n[base]\nmodel = \"tiny\"\n"
                         "data = \"builtin:stories\"\nbatch = 2\nblock = 16\nsteps = 4\n"
                         "threads = 1\n[[case]]\nname = \"p\"\nmode = \"naive\"\n"
                      << extra;
  return path.string();
}

TEST_F(CheckTest, CalibrateRefusesAnUnwritableBaselineBeforeAnyRun) {
  const auto r = run_trainscope("check calibrate " + q(tiny_suite(dir_, "")) + " --db " +
                                q(dir_ / "cal.db") + " --save-baseline /nonexistent/dir/x.json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--save-baseline /nonexistent/dir/x.json"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("calibration run 1"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "cal.db"));
}

TEST_F(CheckTest, CalibrateOfACaseThatFailsEveryRunFailsAndWritesNothing) {
  // An option the trainer refuses at start: every run of the case fails.
  const std::string suite = tiny_suite(dir_, "extra_args = [\"--no-such-flag\"]\n");
  const auto r = run_trainscope("check calibrate " + q(suite) + " --runs 2 --db " +
                                q(dir_ / "cal.db") + " --save-baseline " + q(dir_ / "x.json"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("case 'p' of suite 'tiny' failed in calibration run 1"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "x.json"));
}

TEST_F(CheckTest, HistoryTooShortToDecideSaysSoAndEscapesRevisions) {
  const fs::path path = dir_ / "h.db";
  for (int r = 1; r <= 6; ++r) {
    auto spec = honest(static_cast<unsigned>(r));
    spec.git_revision = r == 2 ? "r2\x1b[2J" : fmt::format("r{}", r);
    spec.slowdown = r >= 4 ? 2.0 : 1.0;
    build_suite_db(path, spec);
  }
  const auto r = run_trainscope("history --db " + q(path));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("6 revisions cannot show a change at p < 0.05 (the smallest p of "
                          "Pettitt's test over 6 values is 0.29): no change is found or ruled "
                          "out before 11 revisions"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << "an escape reached the terminal";
  EXPECT_NE(r.output.find("r2\\x1b[2J"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace trainscope::check
