// The stall watchdog: a wait or a step beyond the timeout is said once, with
// the step, phase, collective, bucket and wait; short waits say nothing; the
// status it hands over is where the rank is.
#include "profiler/stall_watchdog.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace trainscope::profiler {
namespace {

using std::chrono::milliseconds;

// What the watchdog printed, through a temporary file.
class Printed {
 public:
  Printed() : file_(std::tmpfile()) {}
  ~Printed() { std::fclose(file_); }
  std::FILE* file() { return file_; }
  std::string text() {
    std::fflush(file_);
    std::rewind(file_);
    std::string out;
    for (int c; (c = std::fgetc(file_)) != EOF;) out += static_cast<char>(c);
    return out;
  }
  int lines() {
    int n = 0;
    for (char c : text()) n += c == '\n';
    return n;
  }

 private:
  std::FILE* file_;
};

StallWatchdogOptions options(std::FILE* out, double timeout_s) {
  StallWatchdogOptions o;
  o.rank = 3;
  o.host = "nodeC";
  o.timeout_s = timeout_s;
  o.out = out;
  return o;
}

TEST(StallWatchdogTest, AWaitBeyondTheTimeoutIsSaidOnceWithWhereItWaits) {
  Printed printed;
  StallWatchdog watchdog(options(printed.file(), 0.05));
  StepTimer timer;
  timer.set_live_position(&watchdog.live_position());
  timer.begin_step(7);
  {
    auto comm = timer.phase(Phase::kComm);
    auto wait = watchdog.wait("all_reduce fused", 2);
    std::this_thread::sleep_for(milliseconds(400));
    const RankStatus s = watchdog.status();
    EXPECT_TRUE(s.stalled);
    EXPECT_EQ(s.collective, "all_reduce fused");
    EXPECT_EQ(s.bucket, 2);
    EXPECT_GE(s.wait_s, 0.4);
  }
  timer.end_step();
  EXPECT_EQ(watchdog.stalls(), 1);
  const std::string text = printed.text();
  EXPECT_EQ(printed.lines(), 1) << text;
  EXPECT_NE(text.find("trainscope: rank 3 (nodeC): no progress for over 0.05 s (--stall-timeout): "
                      "step 7, phase comm, waiting "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(" s in all_reduce fused (bucket 2)\n"), std::string::npos) << text;
  EXPECT_FALSE(watchdog.status().stalled);
}

TEST(StallWatchdogTest, APhaseInNoCollectiveBeyondTheTimeoutIsTheRankOthersWaitFor) {
  Printed printed;
  StallWatchdog watchdog(options(printed.file(), 0.05));
  StepTimer timer;
  timer.set_live_position(&watchdog.live_position());
  timer.begin_step(0);
  {
    auto forward = timer.phase(Phase::kForward);
    std::this_thread::sleep_for(milliseconds(300));
  }
  timer.end_step();
  EXPECT_EQ(watchdog.stalls(), 1);
  EXPECT_NE(printed.text().find("step 0, phase forward for 0."), std::string::npos)
      << printed.text();
  EXPECT_NE(printed.text().find(" s, in no collective\n"), std::string::npos) << printed.text();
}

TEST(StallWatchdogTest, AStepMadeLongByAWaitIsNotAStallOnceTheWaitEnds) {
  Printed printed;
  StallWatchdog watchdog(options(printed.file(), 0.2));
  StepTimer timer;
  timer.set_live_position(&watchdog.live_position());
  timer.begin_step(0);
  {
    auto backward = timer.phase(Phase::kBackward);
    {
      auto comm = timer.phase(Phase::kComm);
      auto wait = watchdog.wait("all_reduce fused", 0);
      std::this_thread::sleep_for(milliseconds(400));
    }
    std::this_thread::sleep_for(milliseconds(100));  // the step has run 0.5 s: not stalled
    EXPECT_FALSE(watchdog.status().stalled);
    EXPECT_GE(watchdog.status().step_s, 0.5);
  }
  timer.end_step();
  EXPECT_EQ(watchdog.stalls(), 1) << printed.text();  // the wait, only
}

TEST(StallWatchdogTest, ShortWaitsAndStepsSayNothing) {
  Printed printed;
  StallWatchdog watchdog(options(printed.file(), 30));
  StepTimer timer;
  timer.set_live_position(&watchdog.live_position());
  for (int step = 0; step < 20; ++step) {
    timer.begin_step(step);
    auto wait = watchdog.wait("all_reduce", 0);
    std::this_thread::sleep_for(milliseconds(1));
    timer.end_step();
  }
  EXPECT_EQ(watchdog.stalls(), 0);
  EXPECT_EQ(printed.text(), "");
}

TEST(StallWatchdogTest, EachStallIsSaidOnceAndAnotherAgain) {
  Printed printed;
  StallWatchdog watchdog(options(printed.file(), 0.05));
  for (int i = 0; i < 2; ++i) {
    auto wait = watchdog.wait("barrier");
    std::this_thread::sleep_for(milliseconds(300));
  }
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(watchdog.stalls(), 2);
  EXPECT_EQ(printed.lines(), 2) << printed.text();
  EXPECT_NE(printed.text().find("stage start, waiting "), std::string::npos) << printed.text();
}

TEST(StallWatchdogTest, AWaitThatBeganDuringAStallIsThatStallStill) {
  // overlap: the communication thread waits in a bucket, the training thread
  // then waits for it; when the bucket completes the training thread's wait,
  // older than the timeout too, is left for a moment. One stall, one line.
  Printed printed;
  StallWatchdog watchdog(options(printed.file(), 0.05));
  std::thread comm_thread([&] {
    auto bucket = watchdog.wait("all_reduce overlap", 0);
    std::this_thread::sleep_for(milliseconds(300));
  });
  std::this_thread::sleep_for(milliseconds(20));
  {
    auto training = watchdog.wait("all_reduce overlap", 1);
    comm_thread.join();
    std::this_thread::sleep_for(milliseconds(200));  // only the later wait is open
    EXPECT_TRUE(watchdog.status().stalled);
    EXPECT_EQ(watchdog.status().bucket, 1);
  }
  EXPECT_EQ(watchdog.stalls(), 1) << printed.text();
  EXPECT_NE(printed.text().find("(bucket 0)"), std::string::npos) << printed.text();
}

TEST(StallWatchdogTest, NestedWaitsShowTheOuterLabelAndTheOldestWaitWins) {
  Printed printed;
  StallWatchdog watchdog(options(printed.file(), 60));
  watchdog.set_stage("train");
  auto outer = watchdog.wait("all_reduce overlap", 4);
  {
    auto inner = watchdog.wait("all_reduce");  // the communicator's, inside the label
    EXPECT_EQ(watchdog.status().collective, "all_reduce overlap");
    EXPECT_EQ(watchdog.status().bucket, 4);
  }
  std::thread other([&] {
    auto later = watchdog.wait("all_reduce loss");  // another thread, newer
    EXPECT_EQ(watchdog.status().collective, "all_reduce overlap");
  });
  other.join();
  const RankStatus s = watchdog.status();
  EXPECT_EQ(s.stage, "train");
  EXPECT_EQ(s.rank, 3);
  EXPECT_EQ(s.host, "nodeC");
  EXPECT_EQ(s.step, -1);
}

TEST(StallWatchdogTest, StatusIsHandedOverAsItGoesAndAtTheEnd) {
  std::mutex mu;
  std::vector<RankStatus> seen;
  Printed printed;
  {
    StallWatchdogOptions o = options(printed.file(), 60);
    o.status_interval_s = 0.02;
    o.on_status = [&](const RankStatus& s) {
      std::lock_guard lock(mu);
      seen.push_back(s);
    };
    StallWatchdog watchdog(o);
    watchdog.set_stage("load_data");
    std::this_thread::sleep_for(milliseconds(200));
    watchdog.set_stage("finished");
  }
  ASSERT_GE(seen.size(), 3u);
  EXPECT_EQ(seen[seen.size() / 2].stage, "load_data");
  EXPECT_EQ(seen.back().stage, "finished");
}

TEST(StallWatchdogTest, AFailingStatusWriterIsSaidOnce) {
  Printed printed;
  {
    StallWatchdogOptions o = options(printed.file(), 60);
    o.status_interval_s = 0.01;
    o.on_status = [](const RankStatus&) { throw std::runtime_error("disk full"); };
    StallWatchdog watchdog(o);
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_EQ(printed.text(), "trainscope: rank 3: cannot keep its status: disk full\n");
}

// Issue 36: a rank stopped (SIGSTOP) while it waited, then continued (mpirun
// does that when it ends a job a stall-abort ended), must not call the time
// it was stopped a stall of its own: its watchdog did not run meanwhile. In a
// forked process, stopped for 2.5 s in a wait that ends 0.1 s after it is
// continued; a stall line or the abort (exit kExitStalled) would be wrong.
TEST(StallWatchdogTest, TimeTheProcessWasStoppedIsNotAStall) {
  using Clock = std::chrono::steady_clock;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    StallWatchdogOptions o = options(stderr, 1.0);
    o.abort_after_s = 1.5;
    StallWatchdog watchdog(o);
    {
      auto wait = watchdog.wait("all_reduce");
      // Until the clock jumps: the parent stopped and continued this process.
      for (auto last = Clock::now(); Clock::now() - last < milliseconds(1500);) {
        last = Clock::now();
        std::this_thread::sleep_for(milliseconds(10));
      }
      std::this_thread::sleep_for(milliseconds(100));
    }
    ::_exit(watchdog.stalls() == 0 ? 0 : 1);
  }
  std::this_thread::sleep_for(milliseconds(200));
  ASSERT_EQ(::kill(child, SIGSTOP), 0);
  std::this_thread::sleep_for(milliseconds(2500));
  ASSERT_EQ(::kill(child, SIGCONT), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: a stall line; " << kExitStalled << ": the abort";
}

TEST(StallWatchdogTest, DescribeSaysWhereInWords) {
  RankStatus s;
  s.stage = "load_data";
  EXPECT_EQ(describe(s), "stage load_data, in no collective");
  s.collective = "all_gather";
  s.wait_s = 2.04;
  EXPECT_EQ(describe(s), "stage load_data, waiting 2.0 s in all_gather");
  s.step = 3;
  s.phase = "comm";
  s.collective = "all_reduce fused";
  s.bucket = 0;
  s.wait_s = 6.1;
  EXPECT_EQ(describe(s), "step 3, phase comm, waiting 6.1 s in all_reduce fused (bucket 0)");
  s.collective.clear();
  s.phase = "forward";
  s.step_s = 6.12;
  s.phase_s = 6.12;
  EXPECT_EQ(describe(s), "step 3, phase forward for 6.1 s, in no collective");
}

}  // namespace
}  // namespace trainscope::profiler
