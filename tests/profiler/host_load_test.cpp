// Host load: the /proc parsers on fixtures, which threads count as other
// processes' on a made-up process tree, and a live reading that sees a
// spinning child as another process's runnable thread.
#include "profiler/host_load.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace trainscope::profiler {
namespace {

TEST(HostLoadTest, ParsesLoadavgAndProcsRunning) {
  HostLoad load;
  ASSERT_TRUE(parse_loadavg("2.50 1.25 0.75 3/412 98765\n", &load));
  EXPECT_EQ(load.loadavg_1m, 2.50);
  EXPECT_EQ(load.loadavg_5m, 1.25);
  EXPECT_EQ(load.loadavg_15m, 0.75);
  HostLoad untouched;
  EXPECT_FALSE(parse_loadavg("garbage", &untouched));
  EXPECT_TRUE(std::isnan(untouched.loadavg_1m));

  const char* stat =
      "cpu  100 0 50 1000 0 0 0 0 0 0\n"
      "intr 12345 0 0\n"
      "procs_running 7\n"
      "procs_blocked 1\n";
  EXPECT_EQ(parse_procs_running(stat), 7);
  EXPECT_EQ(parse_procs_running("cpu 1 2 3\n"), -1);
}

// user nice system idle iowait irq softirq steal (guest, guest_nice: inside user).
TEST(HostLoadTest, CpuTicksAreEverythingButIdleAndIowait) {
  HostLoad load;
  ASSERT_TRUE(parse_cpu_ticks("cpu  100 5 50 1000 20 3 40 2 7 0\ncpu0 1 2 3 4\n", &load));
  EXPECT_EQ(load.cpu_ticks_total, 1220);
  EXPECT_EQ(load.cpu_ticks_busy, 200);
  EXPECT_EQ(load.cpu_ticks_softirq, 40);
  HostLoad old_kernel;  // four columns only
  ASSERT_TRUE(parse_cpu_ticks("cpu 10 0 5 85\n", &old_kernel));
  EXPECT_EQ(old_kernel.cpu_ticks_busy, 15);
  EXPECT_EQ(old_kernel.cpu_ticks_softirq, 0);
  for (const char* bad : {"cpu0 1 2 3 4\n", "cpu 1 2 x 4\n", "cpu 1 2\n", "", "cpu 1 -2 3 4\n"}) {
    HostLoad untouched;
    EXPECT_FALSE(parse_cpu_ticks(bad, &untouched)) << bad;
    EXPECT_EQ(untouched.cpu_ticks_total, -1) << bad;
  }
  const HostLoad now = read_host_load({});
  EXPECT_GT(now.cpu_ticks_total, 0);
  EXPECT_GE(now.cpu_ticks_busy, now.cpu_ticks_softirq);
}

// init (1) -> runner (10) -> mpirun (20) -> ranks 30, 31; a build (40) and a
// sibling of the runner (11) are others, and so is init itself.
TEST(HostLoadTest, TheJobIsItsRanksAndTheirAncestors) {
  const std::vector<ProcessThreads> tree = {
      {1, 0, 1}, {10, 1, 1}, {11, 1, 2}, {20, 10, 1}, {30, 20, 3}, {31, 20, 2}, {40, 1, 5},
  };
  const std::vector<pid_t> ranks = {30, 31};
  EXPECT_EQ(count_other_runnable(tree, ranks), 1 + 2 + 5);
  // One rank alone: the other rank is another process's (a sibling).
  const std::vector<pid_t> rank30 = {30};
  EXPECT_EQ(count_other_runnable(tree, rank30), 1 + 2 + 2 + 5);
  // A pid that is not (or no longer) there counts as the job's and nothing else.
  const std::vector<pid_t> gone = {99};
  EXPECT_EQ(count_other_runnable(tree, gone), 1 + 1 + 2 + 1 + 3 + 2 + 5);
}

TEST(HostLoadTest, ASpinningChildIsAnotherProcesssRunnableThread) {
  const pid_t self = ::getpid();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    volatile unsigned long spins = 0;
    for (;;) spins = spins + 1;
  }
  const std::vector<pid_t> job = {self};
  const HostLoad load = read_host_load(job);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_GE(load.other_runnable, 1);  // the child never sleeps
  EXPECT_GE(load.runnable, 1);        // this thread, reading
  EXPECT_GE(load.cores, 1);
  EXPECT_GE(load.loadavg_1m, 0.0);
  EXPECT_GE(load.loadavg_15m, 0.0);
}

}  // namespace
}  // namespace trainscope::profiler
