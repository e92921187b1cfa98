#include "profiler/monitor.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/check.h"
#include "profiler/process_poller.h"

namespace trainscope::profiler {
namespace {

// When this test binary is started with TRAINSCOPE_MONITOR_TEST_TOUCH_MIB=N it
// acts as the monitored child instead: touch N MiB, hold it briefly, exit 0.
// That gives the tests a child with a known resident size and no dependency
// on other programs.
const bool kIsChild = [] {
  const char* mib = std::getenv("TRAINSCOPE_MONITOR_TEST_TOUCH_MIB");
  if (mib == nullptr) return false;
  const std::size_t bytes = std::strtoull(mib, nullptr, 10) << 20;
  char* p = static_cast<char*>(std::malloc(bytes));
  std::memset(p, 7, bytes);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  std::_Exit(p[bytes / 2] == 7 ? 0 : 1);
  return true;
}();

MonitorOptions quiet(std::vector<std::string> command) {
  MonitorOptions o;
  o.command = std::move(command);
  o.interval_seconds = 0.05;
  o.display = MonitorDisplay::kNone;
  return o;
}

TEST(ProcessPollerTest, ClassifiesLaunchersAndRanks) {
  EXPECT_TRUE(is_launcher_name("mpirun"));
  EXPECT_TRUE(is_launcher_name("hydra_pmi_proxy"));
  EXPECT_TRUE(is_launcher_name("prted"));
  EXPECT_FALSE(is_launcher_name("trainscope"));
  using namespace std::string_literals;
  EXPECT_EQ(rank_from_environ("A=1\0OMPI_COMM_WORLD_RANK=3\0PMIX_RANK=9\0"s), 3);
  EXPECT_EQ(rank_from_environ("PMIX_RANK=5\0"s), 5);
  EXPECT_EQ(rank_from_environ("PMI_RANK=2\0"s), 2);
  EXPECT_EQ(rank_from_environ("OMPI_COMM_WORLD_RANK=x\0PMI_RANK=1\0"s), 1);
  EXPECT_EQ(rank_from_environ("HOME=/root\0"s), -1);
}

TEST(ProcessPollerTest, PollsItselfAndSeesChildren) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::execlp("sleep", "sleep", "2", nullptr);
    ::_exit(127);
  }
  // Until the child has exec'd, it is a copy of this test binary.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (std::string comm; comm != "sleep" && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::ifstream in("/proc/" + std::to_string(child) + "/comm");
    std::getline(in, comm);
  }
  ProcessPoller poller(::getpid());
  const std::vector<ProcessSample>& s = poller.poll();
  bool saw_self = false, saw_child = false;
  for (const ProcessSample& p : s) {
    if (p.pid == ::getpid()) {
      saw_self = true;
      EXPECT_GT(p.rss_bytes, 0);
      EXPECT_EQ(p.role, ProcessRole::kOther);
    }
    if (p.pid == child) {
      saw_child = true;
      EXPECT_EQ(p.ppid, ::getpid());
      EXPECT_NE(p.command.find("sleep"), std::string::npos) << p.command;
    }
  }
  EXPECT_TRUE(saw_self);
  EXPECT_TRUE(saw_child);
  EXPECT_EQ(poller.totals().polls, 1);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(poller.poll().size() >= 1u);  // the reaped child simply disappears
}

// A process seen before its rank's environment is readable (during exec the
// new image's environment appears after its name) must still become a rank
// later: rank 0 used to stay `other` for a whole run, 1 run in 10. Here a
// process with an empty environment execs, under the same name, into one
// whose environment names rank 0.
TEST(ProcessPollerTest, AProcessSeenBeforeItsRankEnvironmentBecomesARank) {
  const pid_t child = ::fork();
  if (child == 0) {
    char* empty_env[] = {nullptr};
    ::execle("/bin/sh", "sh", "-c",
             "sleep 0.4; exec /usr/bin/env OMPI_COMM_WORLD_RANK=0 /bin/sh -c 'sleep 2'",
             static_cast<char*>(nullptr), empty_env);
    ::_exit(127);
  }
  ProcessPoller poller(child);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  ASSERT_FALSE(poller.poll().empty());
  EXPECT_EQ(poller.last_poll()[0].role, ProcessRole::kOther);
  std::this_thread::sleep_for(std::chrono::milliseconds(900));  // past the exec
  int rank = -1;
  for (const ProcessSample& p : poller.poll()) {
    if (p.pid == child) rank = p.rank;
  }
  EXPECT_EQ(rank, 0) << "still classified by its first look";
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST(MonitorTest, FollowsAWholeShellTree) {
  // A second each: long enough to be seen by a poller that a loaded machine
  // delays (half a second was missed now and then under load).
  const MonitorResult r = run_monitor(quiet({"sh", "-c", "sleep 1 & sleep 1; wait"}));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_GE(r.totals.max_processes, 3);  // sh and two sleeps
  int sleeps = 0;
  for (const ProcessSummary& p : r.processes) sleeps += p.command.starts_with("sleep");
  EXPECT_EQ(sleeps, 2);
  EXPECT_GE(r.runtime_seconds, 1.0);
  EXPECT_GT(r.totals.polls, 3);
  EXPECT_FALSE(r.samples.empty());
}

TEST(MonitorTest, PeakRssOfAChildTouching100MiB) {
  ::setenv("TRAINSCOPE_MONITOR_TEST_TOUCH_MIB", "100", 1);
  const MonitorResult r = run_monitor(quiet({"/proc/self/exe"}));
  ::unsetenv("TRAINSCOPE_MONITOR_TEST_TOUCH_MIB");
  EXPECT_EQ(r.exit_code, 0);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_GE(r.processes[0].peak_rss_bytes, int64_t{100} << 20);
  EXPECT_GE(r.totals.peak_rss_bytes, int64_t{100} << 20);
  EXPECT_LE(r.totals.average_rss_bytes, static_cast<double>(r.totals.peak_rss_bytes));
  if (r.processes[0].peak_pss_bytes >= 0) {
    EXPECT_GE(r.processes[0].peak_pss_bytes, int64_t{95} << 20);
  }
  const std::string summary = format_summary(r);
  EXPECT_NE(summary.find("TOTAL"), std::string::npos);
  EXPECT_NE(summary.find(std::to_string(r.pid)), std::string::npos);
}

TEST(MonitorTest, PreservesExitCodesLikeAShell) {
  EXPECT_EQ(run_monitor(quiet({"sh", "-c", "exit 7"})).exit_code, 7);
  EXPECT_EQ(run_monitor(quiet({"sh", "-c", "kill -KILL $$"})).exit_code, 128 + SIGKILL);
  EXPECT_EQ(run_monitor(quiet({"true"})).exit_code, 0);
}

TEST(MonitorTest, NonexistentCommandIsExit127) {
  try {
    run_monitor(quiet({"trainscope_no_such_command_xyz", "arg"}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 127);
    EXPECT_STREQ(e.what(), "command not found: trainscope_no_such_command_xyz");
  }
}

TEST(MonitorTest, UnknownPidIsBadInput) {
  // A PID that just exited and was reaped is free (reuse takes a full wrap).
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  MonitorOptions o;
  o.attach_pid = gone;
  o.display = MonitorDisplay::kNone;
  try {
    run_monitor(o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), kExitBadInput);
    EXPECT_NE(std::string(e.what()).find(std::to_string(gone)), std::string::npos) << e.what();
  }
}

TEST(MonitorTest, BadIntervalIsBadInput) {
  MonitorOptions o = quiet({"true"});
  o.interval_seconds = 0;
  EXPECT_THROW(run_monitor(o), Error);
}

TEST(MonitorTest, AttachesToARunningProcess) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::execlp("sleep", "sleep", "0.4", nullptr);
    ::_exit(127);
  }
  MonitorOptions o;
  o.attach_pid = child;
  o.interval_seconds = 0.05;
  o.display = MonitorDisplay::kNone;
  const MonitorResult r = run_monitor(o);  // returns once the child is a zombie
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_GE(r.totals.polls, 3);
  ASSERT_FALSE(r.processes.empty());
  EXPECT_EQ(r.processes[0].pid, child);
}

TEST(MonitorTest, ClassifiesRankFromEnvironmentAndLauncherByName) {
  // A program called "mpirun" (a symlink to sh) starting a child whose
  // environment carries OMPI_COMM_WORLD_RANK=3.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ts_monitor_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path fake = dir / "mpirun";
  std::filesystem::remove(fake);
  std::filesystem::create_symlink("/bin/sh", fake);
  const MonitorResult r =
      run_monitor(quiet({fake.string(), "-c", "env OMPI_COMM_WORLD_RANK=3 sleep 0.5; true"}));
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.exit_code, 0);
  bool saw_launcher = false, saw_rank = false;
  for (const ProcessSummary& p : r.processes) {
    if (p.role == ProcessRole::kLauncher) saw_launcher = true;
    if (p.role == ProcessRole::kRank) {
      saw_rank = true;
      EXPECT_EQ(p.rank, 3);
      EXPECT_NE(p.command.find("sleep"), std::string::npos);
    }
  }
  EXPECT_TRUE(saw_launcher);
  EXPECT_TRUE(saw_rank);
}

// Whether this process has a handler installed for `sig` (SigCgt mask).
bool catches(int sig) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("SigCgt:")) {
      const unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
      return (mask >> (sig - 1)) & 1;
    }
  }
  return false;
}

// Sends SIGTERM to this process as soon as the monitor handles it, and after
// `delay` more: early enough to land while the child is being started.
std::thread terminate_when_handled(std::chrono::milliseconds delay) {
  return std::thread([delay] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!catches(SIGTERM) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    std::this_thread::sleep_for(delay);
    ::kill(::getpid(), SIGTERM);
  });
}

TEST(MonitorTest, ForwardsSigtermToTheChild) {
  std::thread killer = terminate_when_handled(std::chrono::milliseconds(300));
  const MonitorResult r = run_monitor(quiet({"sleep", "5"}));
  killer.join();
  EXPECT_EQ(r.exit_code, 128 + SIGTERM);
  EXPECT_LT(r.runtime_seconds, 4.0);
}

TEST(MonitorTest, ASigtermWhileTheChildStartsIsNotLost) {
  for (int i = 0; i < 5; ++i) {
    std::thread killer = terminate_when_handled(std::chrono::milliseconds(0));
    const MonitorResult r = run_monitor(quiet({"sleep", "5"}));
    killer.join();
    EXPECT_EQ(r.exit_code, 128 + SIGTERM) << "try " << i;
    EXPECT_LT(r.runtime_seconds, 4.0) << "try " << i;
  }
}

TEST(MonitorTest, CsvHasHeaderAndOneRowPerSample) {
  const MonitorResult r = run_monitor(quiet({"sh", "-c", "sleep 0.3"}));
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("ts_monitor_" + std::to_string(::getpid()) + ".csv"))
                               .string();
  write_samples_csv(path, r.samples);
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "time_s,pid,ppid,role,rank,rss_bytes,pss_bytes,command");
  std::size_t rows = 0;
  while (std::getline(in, line)) ++rows;
  EXPECT_EQ(rows, r.samples.size());
  EXPECT_GT(rows, 0u);
  std::filesystem::remove(path);
  const std::string quoted = samples_to_csv({ProcessSample{.command = "a,\"b\""}});
  EXPECT_EQ(quoted.substr(quoted.find('\n') + 1), "0.000,0,0,other,-1,-1,-1,\"a,\"\"b\"\"\"\n");
}

}  // namespace
}  // namespace trainscope::profiler
