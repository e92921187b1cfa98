// `trainscope cluster check` on this machine alone (a hostfile naming
// localhost: the one-host cluster), and its bad input. The check on a
// 2-host virtual cluster is in tests/suites/virtual_cluster_test.cpp (needs
// root).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/run_command.h"
#include "tests/temp_dir.h"
#include "tests/terminal_safe.h"

namespace trainscope {
namespace {

using testing::run_shell;
using testing::run_trainscope;
using testing::TempDir;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ClusterCheckCommandTest, OneHostNamedLocalhostPasses) {
  if (run_shell("command -v mpirun").exit_code != 0) GTEST_SKIP() << "mpirun not found";
  const TempDir dir("cluster");
  const std::string hosts = dir.write("hosts", "# this machine\nlocalhost slots=2\n");
  const auto r = run_trainscope("cluster check --hostfile " + hosts);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(
      has(r.output, "# trainscope cluster check: 1 host of " + hosts + ", tcp interface lo"))
      << r.output;
  // The host's line: its name as given, the loopback address, passed.
  EXPECT_TRUE(has(r.output, " localhost ")) << r.output;
  EXPECT_TRUE(has(r.output, "      lo       127.0.0.1  ok\n")) << r.output;
  EXPECT_TRUE(has(r.output, "# no pair to measure: 1 host passed")) << r.output;
  EXPECT_TRUE(has(r.output, "\n# OK\n")) << r.output;
}

TEST(ClusterCheckCommandTest, BadInputIsExitCode2NamingWhatIsWrong) {
  const TempDir dir("cluster");
  const std::string bad = dir.write("bad", "localhost\nnode1 slots=two\n");
  const std::string remote = dir.write("remote", "node1.example.invalid slots=1\n");
  const std::string local = dir.write("local", "localhost\n");
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"cluster check", "--hostfile is required"},
           {"cluster check --hostfile " + bad, bad + ":2: slots must be a whole number"},
           {"cluster check --hostfile " + remote,
            "host 'node1.example.invalid' is not this machine, but Open MPI's TCP traffic is "
            "pinned to lo"},
           {"cluster check --hostfile " + local + " --mpirun /nonexistent/mpirun",
            "/nonexistent/mpirun"},
           {"cluster check --hostfile " + local + " --links 5", "--links"},
           {"cluster check --hostfile " + local + " --bytes 2", "--bytes"},
       }) {
    const auto r = run_trainscope(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_TRUE(has(r.output, message)) << args << "\n" << r.output;
  }
}

// Issue 25 item 13: a hostfile of random bytes, escape sequences included,
// is bad input whose message quotes the file escaped: nothing of it reaches
// the terminal raw. The bytes are seeded, so a failure repeats.
TEST(ClusterCheckCommandTest, AHostfileOfRandomBytesIsQuotedEscaped) {
  const TempDir dir("cluster");
  std::mt19937 rng(25);
  for (int trial = 0; trial < 20; ++trial) {
    std::string bytes = trial == 0 ? "node\x1b[2J\x07\xc2\x9b"
                                     "31m slots=1\n"
                                   : "";
    for (int i = 0; i < 300; ++i) bytes += static_cast<char>(rng() & 0xff);
    const std::string hosts = dir.write("hosts", bytes);
    const auto r = run_trainscope("cluster check --hostfile " + hosts);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(testing::terminal_unsafe(r.output), "") << "trial " << trial;
    if (trial == 0) {
      EXPECT_TRUE(has(r.output, "node\\x1b[2J\\x07\\u009b31m")) << r.output;
    }
  }
}

TEST(ClusterCheckCommandTest, HelpExplainsCheckAndHidesTheProbe) {
  const auto r = run_trainscope("cluster --help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "check")) << r.output;
  EXPECT_FALSE(has(r.output, "probe")) << r.output;
  const auto check = run_trainscope("cluster check --help");
  EXPECT_EQ(check.exit_code, 0);
  EXPECT_TRUE(has(check.output, "--map-by node")) << check.output;
  EXPECT_TRUE(has(check.output, "--tcp-interface")) << check.output;
}

}  // namespace
}  // namespace trainscope
