// `trainscope compare` end to end (suites/paired_runner.h): a head with a
// planted slowdown is a REGRESSION, identical builds pass, a failing head
// fails, the cap gives INCONCLUSIVE, and bad input writes nothing; the pairs,
// both sides' suites and the verdicts are in the database.
#include "suites/paired_runner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "results/results_db.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

namespace trainscope::suites {
namespace {

class PairedRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    suite_ = dir_.write("one.toml",
                        "name = \"one\"\n[base]\nmodel = \"tiny\"\ndata = \"builtin:stories\"\n"
                        "batch = 4\nblock = 32\nsteps = 20\nwarmup_steps = 2\nthreads = 1\n"
                        "[[case]]\nname = \"p\"\nmode = \"naive\"\n");
  }
  // A trainscope that runs with `env` set.
  std::string wrapper(const std::string& name, const std::string& env) {
    const std::string path = dir_.write(name, "#!/bin/sh\nexport " + env + "\nexec '" +
                                                  testing::trainscope_binary() + "' \"$@\"\n");
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path;
  }
  testing::CommandResult compare(const std::string& head, const std::string& flags = "") {
    return testing::run_trainscope("compare --seed 3 --base " + testing::trainscope_binary() +
                                   " --head " + head + " --db " + db() + " " + flags + " " +
                                   suite_);
  }
  std::string db() const { return dir_.file("c.db"); }

  testing::TempDir dir_{"paired"};
  std::string suite_;
};

TEST_F(PairedRunnerTest, APlantedSlowdownInTheHeadIsARegression) {
  const auto r = compare(wrapper("slow", "TRAINSCOPE_SLOWDOWN=200"));
  ASSERT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("# verdict: REGRESSION"), std::string::npos) << r.output;
  auto results = results::ResultsDb::open_for_reading(db());
  const auto comparisons = results.list_comparisons();
  ASSERT_EQ(comparisons.size(), 1u);
  const results::ComparisonInfo& info = comparisons[0].info;
  EXPECT_EQ(info.verdict, "REGRESSION");
  EXPECT_EQ(info.seed, 3);
  EXPECT_NE(info.head.version.find("trainscope"), std::string::npos);
  const auto pairs = results.comparison_pairs(comparisons[0].id);
  ASSERT_EQ(pairs.size(), 6u);  // decided at the first pairs that give an interval
  std::set<bool> orders;
  for (const auto& p : pairs) {
    orders.insert(p.head_first);
    EXPECT_GT(p.head_step_s, 2 * p.base_step_s);  // 200% planted: 3x
    EXPECT_EQ(results.run(p.base_run_id)->suite_id, info.base_suite_id);
    EXPECT_EQ(results.run(p.head_run_id)->suite_id, info.head_suite_id);
  }
  EXPECT_EQ(orders.size(), 2u) << "the order is drawn per pair";
  const auto cases = results.comparison_cases(comparisons[0].id);
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_GT(cases[0].low, 2.0);
  // The head's suite is the database's latest: what report and check read.
  EXPECT_EQ(results.latest_suite_id(), info.head_suite_id);
}

TEST_F(PairedRunnerTest, IdenticalBuildsPass) {
  // A threshold far above the noise of 0.1-second runs: the test is of the
  // decision, not of the machine's quiet.
  const auto r = compare(testing::trainscope_binary(), "--threshold 300");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("# verdict: PASS"), std::string::npos) << r.output;
  const auto md = testing::run_trainscope("report --format md --db " + db());
  EXPECT_NE(md.output.find("Paired comparison 1 of suite one: PASS"), std::string::npos)
      << md.output;
}

TEST_F(PairedRunnerTest, AHeadThatFailsFailsTheComparison) {
  // Its `version` runs; its training does not.
  const auto r = compare(wrapper("bad", "TRAINSCOPE_SLOWDOWN=abc"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("FAILED"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the head run failed"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("# verdict: FAILED"), std::string::npos) << r.output;
}

TEST_F(PairedRunnerTest, AHeadThatCannotSayItsVersionIsBadInput) {
  const auto r = compare(wrapper("broken", "TRAINSCOPE_MAX_CPU_ISA=nonsense"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("broken version"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(db()));
}

TEST_F(PairedRunnerTest, AtTheCapUndecidedIsInconclusiveWithThePairsItNeeds) {
  const auto r = compare(testing::trainscope_binary(), "--max-minutes 0.001");
  EXPECT_EQ(r.exit_code, kExitInconclusive) << r.output;
  EXPECT_NE(r.output.find("INCONCLUSIVE"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("needs about 6 pairs"), std::string::npos) << r.output;
}

TEST_F(PairedRunnerTest, BadInputWritesNothing) {
  for (const std::string& flags :
       {std::string("--min-pairs 3"), std::string("--max-pairs 7 --min-pairs 8"),
        std::string("--threshold -5")}) {
    const auto r = compare(testing::trainscope_binary(), flags);
    EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.output;
  }
  const auto missing = compare(dir_.file("no-such-trainscope"));
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("--head"), std::string::npos) << missing.output;
  EXPECT_FALSE(std::filesystem::exists(db()));
}

}  // namespace
}  // namespace trainscope::suites
