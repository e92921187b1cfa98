// The program against a hostile user: each test is one fault a battery of
// bad inputs found (output that cannot be written, paths that are wrong,
// interrupted saves...), and checks the exit code scripts rely on (0 ok,
// 1 the work failed, 2 bad input), that the message names the culprit, and
// that nothing is lost or left half-written.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "results/results_db.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

namespace trainscope {
namespace {

namespace fs = std::filesystem;
using testing::run_trainscope;
using testing::shell_quote;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// A results database with one suite of no runs: what `report` needs.
std::string empty_suite_db(const testing::TempDir& dir) {
  const std::string path = dir.file("results.db");
  auto db = results::ResultsDb::open_for_writing(path);
  results::SuiteInfo info;
  info.name = "empty";
  db.finish_suite(db.begin_suite(info));
  return path;
}

// Item 4: a full disk under stdout is a failure (exit 1), not a success with
// a truncated or empty output.
TEST(FaultsTest, AFullStdoutIsAFailure) {
  testing::TempDir dir("faults");
  const std::string lines = dir.write("lines.txt", std::string(200000, 'x') + "\n");
  auto r = run_trainscope("tokenize <" + shell_quote(lines) + " >/dev/full");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "standard output");
  r = run_trainscope("report --db " + shell_quote(empty_suite_db(dir)) + " --format md >/dev/full");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "standard output");
}

// Item 14: a directory on stdin is bad input, not an empty success.
TEST(FaultsTest, ADirectoryOnStdinIsBadInput) {
  testing::TempDir dir("faults");
  const auto r = run_trainscope("tokenize <" + shell_quote(dir.path().string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_CONTAINS(r.output, "standard input");
}

// Item 15: hosts with different core counts give their ranks different
// thread counts; the replicas must still end identical (the trainer checks
// a hash of every rank's parameters and fails the run otherwise).
TEST(FaultsTest, RanksWithDifferentThreadCountsStayIdentical) {
  if (run_trainscope("version").exit_code != 0 ||
      testing::run_shell("command -v mpirun").exit_code != 0) {
    GTEST_SKIP() << "mpirun not found";
  }
  const std::string train = shell_quote(testing::trainscope_binary()) +
                            " train --model tiny --steps 10 --mode sharded --quiet";
  const auto r = testing::run_shell(
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe "
      "--bind-to none --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo -np 1 " +
      train + " --threads 1 : -np 1 " + train + " --threads 2");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("parameters different"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace trainscope
