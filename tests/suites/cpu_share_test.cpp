// Hosts smaller than a core (netns-cluster.sh up --cpu-share F): each host's
// processes run under a cgroup CPU quota of F of its core, hosts whose
// quotas fit share a core, the quota goes with `down`, and a share outside
// (0, 1] or more hosts than the cores can hold is bad input. The base of
// time dilation (docs/CLUSTERS.md).
//
// These make clusters (netns_fixture.h: skipped with the reason where this
// machine cannot; nothing of a test's cluster may remain).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "base/check.h"
#include "suites/cpus.h"
#include "suites/virtual_cluster.h"
#include "tests/suites/netns_fixture.h"

namespace trainscope::suites {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::kScripts;
using testing::run_shell;
using testing::trim;

// And a CPU quota: root, and a cgroup cpu controller this process may write.
class CpuShareTest : public testing::NetnsTest {
 protected:
  void SetUp() override {
    const std::string why = cpu_quota_unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << "CPU quotas cannot be had here: " << why;
    testing::NetnsTest::SetUp();
  }
};

std::string slurp_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return trim(s.str());
}

// The quota / period a cgroup folder holds (v2 cpu.max or v1 cfs files),
// with the period in microseconds.
std::pair<double, long> share_of_cgroup(const fs::path& cg) {
  long quota = 0, period = 0;
  if (fs::exists(cg / "cpu.max")) {
    std::istringstream(slurp_file(cg / "cpu.max")) >> quota >> period;
  } else {
    quota = std::stol(slurp_file(cg / "cpu.cfs_quota_us"));
    period = std::stol(slurp_file(cg / "cpu.cfs_period_us"));
  }
  return {period > 0 ? static_cast<double>(quota) / static_cast<double>(period) : 0, period};
}

// Seconds of "0m1.230000s": the format of the shell's `times`.
double times_seconds(const std::string& word) {
  const std::size_t m = word.find('m');
  if (m == std::string::npos) return -1;
  return std::stod(word.substr(0, m)) * 60 + std::stod(word.substr(m + 1));
}

TEST_F(CpuShareTest, AHostAtHalfAShareGetsHalfACore) {
  VirtualClusterSpec spec;
  spec.prefix = prefix();
  spec.hosts = 2;
  spec.cpu_share = 0.5;
  try {
    cluster_.emplace(VirtualCluster::up(spec));
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  EXPECT_DOUBLE_EQ(cluster_->config().cpu_share, 0.5);
  // Two halves fit in one core: both hosts are pinned to the same one.
  const auto cpus = cluster_->host_cpus();
  ASSERT_EQ(cpus.size(), 2u);
  EXPECT_FALSE(cpus[0].empty());
  EXPECT_EQ(cpus[0], cpus[1]);

  const fs::path cg = slurp_file("/run/trainscope-netns/" + prefix() + "/" + host(0) + ".cgroup");
  ASSERT_TRUE(fs::is_directory(cg)) << cg;
  const auto [share, period_us] = share_of_cgroup(cg);
  EXPECT_DOUBLE_EQ(share, 0.5);
  EXPECT_GE(period_us, 1000);  // short, so that a step is throttled smoothly
  EXPECT_LE(period_us, 5000);

  // A busy loop for 2 s of wall clock in host 0: its CPU time is about half
  // of it. The quota caps it from above whatever else runs; from below,
  // other work on this core may take some (a tolerant bound).
  const auto t0 = std::chrono::steady_clock::now();
  const CommandResult busy = run_shell(kScripts + "/netns-rsh-agent.sh " + host(0) +
                                       " 'timeout 2 sh -c \"while :; do :; done\"; times'");
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::istringstream lines(busy.output);
  std::string self_line, children_line;
  std::getline(lines, self_line);
  std::getline(lines, children_line);
  std::istringstream words(children_line);
  std::string user, sys;
  ASSERT_TRUE(words >> user >> sys) << busy.output;
  const double cpu = times_seconds(user) + times_seconds(sys);
  EXPECT_GE(wall, 2.0);
  EXPECT_LE(cpu / 2.0, 0.5 * 1.2) << busy.output;
  EXPECT_GE(cpu / 2.0, 0.5 * 0.4) << busy.output;
  // It was throttled: the quota, not chance, held it back.
  const std::string stat = slurp_file(cg / "cpu.stat");
  std::istringstream fields(stat);
  long throttled = -1;
  for (std::string key; fields >> key;) {
    if (key == "nr_throttled") fields >> throttled;
  }
  EXPECT_GT(throttled, 0) << stat;

  cluster_->down();
  EXPECT_FALSE(fs::exists(cg)) << "the host's cgroup outlived `down`";
  EXPECT_FALSE(fs::exists(cg.parent_path())) << "the cluster's cgroup outlived `down`";
}

TEST_F(CpuShareTest, ASharesOutsideZeroToOneOrTooFewCoresIsExitCode2) {
  const std::string up = kScripts + "/netns-cluster.sh up ";
  const std::string p = " --prefix " + prefix();
  for (const std::string share : {"0", "1.5", "half", "-0.5"}) {
    const CommandResult r = run_shell(up + "2" + p + " --cpu-share " + share + " 2>&1");
    EXPECT_EQ(r.exit_code, 2) << share << ": " << r.output;
    EXPECT_NE(r.output.find("--cpu-share '" + share + "'"), std::string::npos) << r.output;
  }
  // Two hosts at 0.5 fit in a core: one host more than the cores hold.
  const int hosts = 2 * cores_available() + 1;
  const CommandResult r = run_shell(up + std::to_string(hosts) + p + " --cpu-share 0.5 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("needs " + std::to_string(cores_available() + 1) + " cores"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(testing::namespaces_of(prefix()).empty());
}

// scripts/dilation-check.sh: the model trained at full speed, alone under
// the quota and two at once on one CPU; the effective shares it prints, and
// an exit status that agrees with them (0 within 10% of F, else 1). Its
// cgroups go with it.
TEST_F(CpuShareTest, TheDilationCheckMeasuresTheEffectiveShare) {
  const CommandResult r =
      run_shell("TRAINSCOPE_BIN=" + testing::shell_quote(testing::trainscope_binary()) + " " +
                kScripts + "/dilation-check.sh --rounds 1 --steps 4 2>&1");
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.output;
  const std::string line = "effective share, median of 1 rounds: alone ";
  const std::size_t at = r.output.find(line);
  ASSERT_NE(at, std::string::npos) << r.output;
  double alone = 0, shared = 0;
  ASSERT_EQ(std::sscanf(r.output.c_str() + at + line.size(), "%lf, 2 at once %lf", &alone, &shared),
            2)
      << r.output;
  for (const double share : {alone, shared}) {
    EXPECT_GT(share, 0.05) << r.output;
    EXPECT_LT(share, 1.2) << r.output;
  }
  const auto within = [](double share) { return share / 0.5 > 0.9 && share / 0.5 < 1.1; };
  EXPECT_EQ(r.exit_code, within(alone) && within(shared) ? 0 : 1) << r.output;
  for (const auto& entry : fs::directory_iterator(fs::path(
           fs::exists("/sys/fs/cgroup/cpu/tasks") ? "/sys/fs/cgroup/cpu" : "/sys/fs/cgroup"))) {
    const std::string name = entry.path().filename().string();
    EXPECT_NE(name.rfind("trainscope-share-", 0), 0u) << "cgroup left behind: " << entry.path();
  }
}

// scripts/cpu-share-run.sh (a one-host case with cpu_share): the command
// runs in a cgroup of its own with the quota of F and the hosts' period, its
// exit status is the wrapper's, and the cgroup is gone afterwards.
TEST_F(CpuShareTest, CpuShareRunPutsTheCommandUnderTheQuota) {
  const std::string run = kScripts + "/cpu-share-run.sh ";
  // The command reads its own cgroup's quota and period (v1 or v2).
  const std::string show =
      "bash -c 'p=$(awk -F: \"\\$2 ~ /(^|,)cpu(,|$)/ {print \\$3; exit}\" /proc/self/cgroup); "
      "if [[ -n $p ]]; then d=/sys/fs/cgroup/cpu$p; cat $d/cpu.cfs_quota_us $d/cpu.cfs_period_us; "
      "else p=$(sed -n \"s/^0:://p\" /proc/self/cgroup); cat /sys/fs/cgroup$p/cpu.max; fi; "
      "echo group=$p'";
  const CommandResult r = run_shell(run + "0.5 -- " + show + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream in(r.output);
  long quota = 0, period = 0;
  in >> quota >> period;
  EXPECT_EQ(period, 2000) << r.output;
  EXPECT_EQ(quota, 1000) << r.output;
  const std::size_t at = r.output.find("group=");
  ASSERT_NE(at, std::string::npos) << r.output;
  const std::string group = trim(r.output.substr(at + 6));
  EXPECT_NE(group.find("trainscope-share-"), std::string::npos) << r.output;
  for (const char* root : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup"}) {
    EXPECT_FALSE(fs::exists(std::string(root) + group)) << "left behind: " << root << group;
  }
  EXPECT_EQ(run_shell(run + "0.25 -- bash -c 'exit 7'").exit_code, 7);
  for (const auto& [bad, says] : {std::pair<std::string, std::string>{"0.5 true", "usage"},
                                  {"2 -- true", "F '2'"},
                                  {"'' -- true", "F ''"},
                                  {"0.5 --", "usage"}}) {
    const CommandResult b = run_shell(run + bad + " 2>&1");
    EXPECT_EQ(b.exit_code, 2) << bad << ": " << b.output;
    EXPECT_NE(b.output.find(says), std::string::npos) << bad << ": " << b.output;
  }
}

// Neither script needs root or a cgroup to say how it is used.
TEST(DilationCheckTest, TheScriptsHelpIsExitCode0) {
  for (const char* script : {"/cpu-share-run.sh", "/dilation-check.sh"}) {
    const CommandResult r = run_shell(kScripts + script + " --help 2>&1");
    EXPECT_EQ(r.exit_code, 0) << script << ": " << r.output;
    EXPECT_NE(r.output.find("Exit status"), std::string::npos) << script << ": " << r.output;
  }
}

TEST(DilationCheckTest, BadArgumentsAreExitCode2WithTheArgument) {
  for (const std::string arg : {"--rounds 0", "--steps 2", "--cpu x", "--cpu 99999", "--frobnicate",
                                "--share 2", "--share ''", "--rounds"}) {
    const CommandResult r = run_shell(kScripts + "/dilation-check.sh " + arg + " 2>&1");
    EXPECT_EQ(r.exit_code, 2) << arg << ": " << r.output;
    EXPECT_NE(r.output.find(arg.substr(0, arg.find(' '))), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace trainscope::suites
