// A rank stopped with SIGSTOP, end to end on 2 ranks (issue 36): at start-up
// (before MPI's initialisation completes) and mid-run, `train --stall-action
// abort` ends within twice the stall timeout, exit 3, a line naming rank 1 as
// the one that has not arrived, with no flag beyond the stall's own; a job
// the suite runner ran leaves nothing in /dev/shm or the temporary directory,
// whatever ended it. Each job gets its own TMPDIR (Open MPI's session
// directory goes there), so "nothing left" is that directory being empty.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/process.h"
#include "suites/runner.h"
#include "tests/local_mpirun.h"
#include "tests/scoped_env.h"
#include "tests/temp_dir.h"

namespace trainscope::suites {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const std::string kRankProgram = TRAINSCOPE_BINARY_DIR "/trainscope";
constexpr double kStallTimeout = 5;  // --stall-timeout; the grace after it is 0.5 s

double seconds_after(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// What the rank wrapper noted of rank `rank`: its pid, its parent (mpirun)
// and Open MPI's job id, in hex as the job's shared-memory segments are named.
struct RankNote {
  pid_t pid = 0, launcher = 0;
  std::string job_hex;
};

class StoppedRankTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kRankProgram)) << "build trainscope first";
    fs::create_directories(tmp_);
    // Every rank runs through this: it notes itself, and with
    // STOP_AT_START=R rank R stops itself before trainscope even starts.
    wrapper_ = dir_.write("rank.sh",
                          "#!/bin/sh\n"
                          "r=$OMPI_COMM_WORLD_RANK\n"
                          "echo \"$$ $PPID $OMPI_MCA_ess_base_jobid\" > " +
                              dir_.file("rank") +
                              "$r.tmp\n"
                              "mv " +
                              dir_.file("rank") + "$r.tmp " + dir_.file("rank") +
                              "$r\n"
                              "[ \"$r\" = \"$STOP_AT_START\" ] && kill -STOP $$\n"
                              "exec " +
                              kRankProgram + " \"$@\"\n");
    fs::permissions(wrapper_, fs::perms::owner_all);
  }

  // Rank `rank` as the wrapper noted it; waits up to 60 s for the note.
  RankNote rank_note(int rank) {
    const fs::path path = dir_ / fmt::format("rank{}", rank);
    for (const auto start = Clock::now(); !fs::exists(path) && seconds_after(start) < 60;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    RankNote note;
    unsigned long long job = 0;
    if (std::sscanf(read_file(path).c_str(), "%d %d %llu", &note.pid, &note.launcher, &job) == 3) {
      note.job_hex = fmt::format("{:x}", job);
    }
    return note;
  }

  // The 2-rank training job, in its own process group, TMPDIR tmp_.
  ChildProcess start_job(std::vector<std::string> train_args, const std::string& stop_at_start) {
    SpawnOptions spawn;
    spawn.argv = testing::local_mpirun(2);
    spawn.argv.insert(spawn.argv.end(), {wrapper_, "train", "--model", "tiny", "--mode", "sharded",
                                         "--steps", "1000000", "--threads", "1", "--log-every", "1",
                                         "--stall-action", "abort", "--stall-timeout",
                                         fmt::format("{}", kStallTimeout), "--stall-grace", "0.5"});
    spawn.argv.insert(spawn.argv.end(), train_args.begin(), train_args.end());
    spawn.env = testing::kMpirunAsRoot;
    spawn.env.insert(spawn.env.end(),
                     {"TMPDIR=" + tmp_.string(), "STOP_AT_START=" + stop_at_start});
    spawn.stdin_file = "/dev/null";
    spawn.stdout_file = dir_ / "stdout";
    spawn.stderr_file = dir_ / "stderr";
    spawn.own_process_group = true;
    return trainscope::spawn(spawn);
  }

  // The job's exit code, or nullopt (and the job killed) if it outlived `seconds`.
  static std::optional<int> end_of(ChildProcess& job, double seconds) {
    if (std::optional<int> code = job.wait_for(seconds)) return code;
    ::kill(-job.pid(), SIGCONT);
    job.kill_tree({}, 1);
    return std::nullopt;
  }

  // Nothing of the job left: no segment of its job id in /dev/shm, nothing in
  // its TMPDIR (Open MPI's session directory, trainscope's status files).
  // The job ended by rank 0's watchdog within twice the stall timeout of
  // `since`, exit 3, naming rank 1 as not arrived ("rank 1 (" + `how`); its
  // stderr.
  std::string expect_ended_naming_rank1(ChildProcess& job, Clock::time_point since,
                                        const std::string& how) {
    const std::optional<int> code = end_of(job, 30);
    const std::string err = stderr_text();
    EXPECT_TRUE(code.has_value()) << "still running 30 s on\n" << err;
    EXPECT_LT(seconds_after(since), 2 * kStallTimeout);
    EXPECT_EQ(code, std::optional<int>(kExitStalled)) << err;
    EXPECT_NE(err.find("trainscope: rank 0 ("), std::string::npos) << err;
    EXPECT_NE(err.find("; not arrived: rank 1 (" + how), std::string::npos) << err;
    return err;
  }

  // What was left is removed: a failing test leaves nothing either.
  void expect_nothing_left(const RankNote& note) {
    ASSERT_FALSE(note.job_hex.empty());
    for (const auto& e : fs::directory_iterator("/dev/shm")) {
      const std::string name = e.path().filename().string();
      if (name.find("." + note.job_hex + ".") == std::string::npos) continue;
      ADD_FAILURE() << e.path() << " left";
      fs::remove(e.path());
    }
    for (const auto& e : fs::recursive_directory_iterator(tmp_)) {
      ADD_FAILURE() << e.path() << " left in the job's TMPDIR";
    }
  }

  std::string stderr_text() { return dir_.read("stderr"); }

  testing::TempDir dir_{"stopped-rank-test"};
  fs::path tmp_ = dir_ / "tmp";
  std::string wrapper_;
};

// Row 1: no --status-dir, yet rank 0 names rank 1 as the one that has not
// arrived (each rank keeps its status in the job's own directory by default,
// which goes with the job); and rank 1, once continued, says nothing.
TEST_F(StoppedRankTest, ARankStoppedMidRunIsNamedWithNoFlag) {
  ChildProcess job = start_job({}, "");
  const RankNote rank1 = rank_note(1);
  ASSERT_NE(rank1.pid, 0) << "rank 1 never started";
  // Training: rank 0 has logged a few steps.
  for (const auto start = Clock::now(); seconds_after(start) < 60;) {
    if (dir_.read("stdout").find("step     3/") != std::string::npos) break;
    ASSERT_FALSE(job.try_wait().has_value()) << stderr_text();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(::kill(rank1.pid, SIGSTOP), 0);
  const std::string err = expect_ended_naming_rank1(job, Clock::now(), "");
  // Rank 1, continued by mpirun to be ended, does not claim a stall of its own.
  EXPECT_EQ(err.find("trainscope: rank 1 ("), std::string::npos) << err;
  expect_nothing_left(rank1);
}

// Row 2: rank 1 stopped before trainscope starts, so before MPI's
// initialisation can complete on any rank: the watchdog covers start-up too.
TEST_F(StoppedRankTest, ARankStoppedAtStartUpIsNamedWithinTwiceTheTimeout) {
  const auto start = Clock::now();
  ChildProcess job = start_job({"--status-dir", dir_.file("status")}, "1");
  const std::string err = expect_ended_naming_rank1(job, start, "no status file here)");
  EXPECT_NE(err.find("waits in MPI_Init at stage start"), std::string::npos) << err;
  expect_nothing_left(rank_note(1));
}

// Row 3: a suite job that something else ended (as `timeout` does) while
// rank 1 was stopped in start-up leaves neither its ranks' segments nor
// mpirun's session directory: the runner removes them by the job's id once
// the job is gone.
TEST_F(StoppedRankTest, WhatASuiteJobKilledFromOutsideLeftIsRemoved) {
  const testing::ScopedEnv tmpdir("TMPDIR", tmp_.string());
  const testing::ScopedEnv stop("STOP_AT_START", "1");
  RunnerOptions options;
  options.db_path = dir_ / "results.db";
  options.trainscope_binary = wrapper_;
  options.measure_limits = false;
  options.poll_interval_s = 0.1;
  std::FILE* sink = std::fopen("/dev/null", "w");
  options.progress = options.out = sink;
  std::optional<SuiteResult> result;
  std::thread runner([&] {
    result = run_suite(parse_suite("name = \"stop\"\ntimeout_s = 30\n[base]\nmodel = \"tiny\"\n"
                                   "mode = \"sharded\"\nranks = 2\nthreads = 1\nsteps = 1000\n"
                                   "stall_action = \"warn\"\n[[case]]\nname = \"stopped\"\n",
                                   "stop.toml", dir_.path()),
                       options);
  });
  const RankNote rank1 = rank_note(1);
  // Rank 0 has made its segment and waits in MPI's start-up for rank 1.
  for (const auto start = Clock::now(); seconds_after(start) < 30;) {
    bool made = false;
    for (const auto& e : fs::directory_iterator("/dev/shm")) {
      made = made || e.path().filename().string().ends_with("." + rank1.job_hex + ".0");
    }
    if (made) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // As `timeout` ends a command: SIGTERM to it, then to its process group.
  // The second makes mpirun exit at once, without stopping its ranks first.
  if (rank1.launcher != 0) {
    ::kill(rank1.launcher, SIGTERM);
    ::kill(-::getpgid(rank1.launcher), SIGTERM);
  } else {
    ADD_FAILURE() << "rank 1 never started: the case ends at its timeout";
  }
  runner.join();
  std::fclose(sink);
  ASSERT_TRUE(result.has_value());
  ASSERT_EQ(result->runs.size(), 1u);
  EXPECT_EQ(result->runs[0].row.status, results::RunStatus::kFailed);
  expect_nothing_left(rank1);
}

}  // namespace
}  // namespace trainscope::suites
