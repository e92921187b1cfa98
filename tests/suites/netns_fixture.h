// The fixture of the tests that make virtual clusters (ctest label netns):
// each test gets a prefix unique to this process (tsn<pid>), a temporary
// folder, and a check afterwards that nothing of its cluster remains
// (namespaces, /etc/netns entries, recorded state).
//
// Skipped, not failed, where this machine cannot make virtual clusters (not
// root, a tool missing, `ip netns add` refused in a container), with
// virtual_cluster_unavailable_reason()'s reason. Clusters left by a test
// process that was killed (a ctest timeout runs no destructor) are removed
// first.
//
// Traffic of these tests stays inside the namespaces they make, and
// 127.0.0.0/8: nothing is added to the root namespace.
#ifndef TRAINSCOPE_TESTS_SUITES_NETNS_FIXTURE_H_
#define TRAINSCOPE_TESTS_SUITES_NETNS_FIXTURE_H_

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "suites/virtual_cluster.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

namespace trainscope::testing {

inline const std::string kScripts = TRAINSCOPE_SOURCE_DIR "/scripts";

inline std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The namespaces whose name starts with `prefix-`, sorted.
inline std::vector<std::string> namespaces_of(const std::string& prefix) {
  std::istringstream in(run_shell("ip netns list").output);
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    const std::string name = line.substr(0, line.find(' '));
    if (name.rfind(prefix + "-", 0) == 0) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Prefixes tsn<pid> of test processes that no longer exist.
inline std::set<std::string> prefixes_of_dead_tests() {
  std::istringstream in(run_shell("ip netns list").output);
  std::set<std::string> prefixes;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("tsn", 0) != 0) continue;
    const std::string prefix = line.substr(0, line.find('-'));
    const std::string digits = prefix.substr(3);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    if (::kill(std::stoi(digits), 0) != 0 && errno == ESRCH) prefixes.insert(prefix);
  }
  return prefixes;
}

class NetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = suites::virtual_cluster_unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << "virtual clusters cannot be made here: " << why;
    for (const auto& p : prefixes_of_dead_tests()) script("down --prefix " + p);
    dir_.emplace("netns");
  }
  void TearDown() override {
    if (!dir_) return;  // skipped
    cluster_.reset();
    script("down --prefix " + prefix());  // also what a test made by hand
    EXPECT_TRUE(namespaces_of(prefix()).empty()) << "namespaces left behind";
    EXPECT_FALSE(std::filesystem::exists("/etc/netns/" + host(0)))
        << "/etc/netns entry left behind";
    EXPECT_FALSE(std::filesystem::exists("/run/trainscope-netns/" + prefix()))
        << "recorded state left behind";
  }

  static std::string prefix() { return "tsn" + std::to_string(::getpid()); }
  static std::string host(int i) { return prefix() + "-h" + std::to_string(i); }

  // Brings up this test's cluster (ASSERT-style: a failure ends the test).
  void bring_up(int hosts, int cores_per_host = 0, const std::string& link = "") {
    suites::VirtualClusterSpec spec;
    spec.prefix = prefix();
    spec.hosts = hosts;
    spec.cores_per_host = cores_per_host;
    spec.link = link;
    try {
      cluster_.emplace(suites::VirtualCluster::up(spec));
    } catch (const Error& e) {
      FAIL() << e.what();
    }
  }

  // scripts/netns-cluster.sh ARGS.
  static CommandResult script(const std::string& args) {
    return run_shell(kScripts + "/netns-cluster.sh " + args);
  }
  // netns-mpirun.sh with the root-allow variables, on this test's hostfile.
  CommandResult mpirun(const std::string& args) const {
    return run_shell("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + kScripts +
                     "/netns-mpirun.sh --hostfile " + cluster_->hostfile().string() + " " + args);
  }
  // Processes still inside the first `hosts` hosts ("" when none).
  static std::string processes_left(int hosts) {
    std::string left;
    for (int i = 0; i < hosts; ++i) left += trim(run_shell("ip netns pids " + host(i)).output);
    return left;
  }

  std::optional<TempDir> dir_;
  std::optional<suites::VirtualCluster> cluster_;
};

}  // namespace trainscope::testing

#endif  // TRAINSCOPE_TESTS_SUITES_NETNS_FIXTURE_H_
