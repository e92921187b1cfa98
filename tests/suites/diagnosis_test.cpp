// Stragglers and hangs diagnosed end to end, with the built trainscope and
// mpirun on 2 ranks: a rank made slow (--inject-delay) is named in the
// report and an even job names none; a hung rank makes the others' watchdog
// say where they wait and the runner record where every rank was; a job
// killed mid-run leaves each rank's streamed trace as valid JSON.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "profiler/proc_fs.h"
#include "profiler/supervise.h"
#include "profiler/process_poller.h"
#include "report/report.h"
#include "analysis/suite_data.h"
#include "results/records.h"
#include "suites/runner.h"
#include "tests/local_mpirun.h"
#include "tests/temp_dir.h"

namespace trainscope::suites {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kTrainscope = TRAINSCOPE_BINARY_DIR "/trainscope";

constexpr const char* kBase =
    "[base]\nmodel = \"tiny\"\nmode = \"sharded\"\nranks = 2\nbatch = 4\nblock = 32\n"
    "warmup_steps = 2\nthreads = 1\n";

class DiagnosisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kTrainscope)) << "build trainscope first";
    options_.db_path = dir_ / "results.db";
    options_.trainscope_binary = kTrainscope;
    options_.command_line = "diagnosis_test";
    options_.poll_interval_s = 0.1;
    options_.progress = sink_;
    options_.out = sink_;
  }
  void TearDown() override { std::fclose(sink_); }

  SuiteResult run(const std::string& toml) {
    return run_suite(parse_suite(toml, "test.toml", dir_.path()), options_);
  }

  // The Markdown row of `rank` in the per-rank table.
  static std::string rank_row(const std::string& md, const std::string& case_name, int rank) {
    const std::string start = "| " + case_name + " | " + std::to_string(rank) + " | ";
    const size_t at = md.find(start);
    return at == std::string::npos ? "" : md.substr(at, md.find('\n', at) - at);
  }

  testing::TempDir dir_{"diagnosis-test"};
  RunnerOptions options_;
  std::FILE* sink_ = std::fopen("/dev/null", "w");
};

TEST_F(DiagnosisTest, ASlowRankIsNamedInTheReportAndEvenRanksAreNot) {
  const SuiteResult r = run(std::string("name = \"stragglers\"\ntimeout_s = 60\n") + kBase +
                            "steps = 8\n[[case]]\nname = \"even\"\n[[case]]\nname = \"slow\"\n"
                            "extra_args = [\"--inject-delay\", \"1:50\"]\n");
  ASSERT_EQ(r.exit_code(), 0) << r.runs[0].row.error << r.runs[1].row.error;
  auto db = results::ResultsDb::open_for_reading(options_.db_path);
  const std::string md = report::render_markdown({analysis::load_suite(db, *db.latest_suite_id())});
  EXPECT_NE(rank_row(md, "slow", 1).find("rank 1 computes"), std::string::npos) << md;
  for (const auto& [name, rank] :
       std::vector<std::pair<std::string, int>>{{"slow", 0}, {"even", 0}, {"even", 1}}) {
    const std::string row = rank_row(md, name, rank);
    ASSERT_FALSE(row.empty()) << name << " " << rank << "\n" << md;
    EXPECT_EQ(row.find("computes"), std::string::npos) << row;
  }
  // Rank 1 sleeps 50 ms in each step's forward: its compute, and the others' wait.
  const results::RunFigures& slow = r.runs[1].figures;
  ASSERT_EQ(slow.rank_times.size(), 2u);
  EXPECT_GE(slow.rank_times[1].compute_s, 0.050);
  EXPECT_GE(slow.rank_times[0].wait_s, 0.040);
  EXPECT_GE(slow.straggler_s, 0.040);
}

// Issue 25 item 14: under a suite a stalled job ends itself once the stall
// has outlasted --stall-timeout and the grace after it: every rank names the
// collective it waits in and the rank that has not arrived, and exits 3; the
// runner records the case as stalled, naming that rank, long before the case's
// own timeout.
TEST_F(DiagnosisTest, AStalledJobEndsItselfNamingTheRankThatDidNotArrive) {
  const auto start = std::chrono::steady_clock::now();
  const SuiteResult r = run(std::string("name = \"hang\"\ntimeout_s = 60\n") + kBase +
                            "steps = 4\n[[case]]\nname = \"hung\"\ntimeout_s = 30\n"
                            "extra_args = [\"--inject-delay\", \"1:60000\", \"--stall-timeout\", "
                            "\"1\"]\n");
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.runs.size(), 1u);
  const std::string& error = r.runs[0].row.error;
  EXPECT_EQ(r.runs[0].row.status, results::RunStatus::kFailed);
  EXPECT_EQ(error.find("stalled: rank 0 ("), 0u) << error;
  EXPECT_NE(error.find("waits in all_reduce fused (bucket 0) at step 0; not arrived: rank 1 ("),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("--stall-action abort"), std::string::npos) << error;
  EXPECT_LT(elapsed, 20) << "ended by the watchdog (about 2 s), not the case's timeout";
  // Rank 1 says it is the one the others wait for.
  EXPECT_NE(error.find("trainscope: rank 1 ("), std::string::npos) << error;
}

// --stall-action warn: the watchdogs only say where they are; the case's
// timeout ends the job.
TEST_F(DiagnosisTest, AHungRankIsFoundByTheWatchdogAndTheRunnersRecord) {
  const SuiteResult r = run(std::string("name = \"hang\"\ntimeout_s = 60\n") + kBase +
                            "steps = 4\n[[case]]\nname = \"hung\"\ntimeout_s = 8\n"
                            "stall_action = \"warn\"\n"
                            "extra_args = [\"--inject-delay\", \"1:60000\", \"--stall-timeout\", "
                            "\"1\"]\n");
  ASSERT_EQ(r.runs.size(), 1u);
  const std::string& error = r.runs[0].row.error;
  EXPECT_EQ(r.runs[0].row.status, results::RunStatus::kFailed);
  EXPECT_EQ(error.find("timed out after 8 s (killed); the ranks were last seen at:\n"), 0u)
      << error;
  // Rank 0 waits in step 0's gradient reduction for rank 1, which is still
  // in its forward phase, in no collective.
  EXPECT_NE(error.find("\n  rank 0 ("), std::string::npos) << error;
  EXPECT_NE(error.find("): step 0, phase comm, waiting "), std::string::npos) << error;
  EXPECT_NE(error.find(" s in all_reduce fused (bucket 0)\n  rank 1 ("), std::string::npos)
      << error;
  EXPECT_NE(error.find("): step 0, phase forward for "), std::string::npos) << error;
  EXPECT_NE(error.find(" s, in no collective\nstderr:\n"), std::string::npos) << error;
  // Each watchdog said so once, on the job's stderr.
  const size_t stderr_at = error.find("\nstderr:\n");
  ASSERT_NE(stderr_at, std::string::npos) << error;
  const std::string stderr_text = error.substr(stderr_at);
  for (int rank : {0, 1}) {
    const std::string line = fmt::format("trainscope: rank {} (", rank);
    EXPECT_EQ(stderr_text.find(line), stderr_text.rfind(line)) << stderr_text;
    EXPECT_NE(stderr_text.find(line), std::string::npos) << stderr_text;
  }
  EXPECT_NE(stderr_text.find("no progress for over 1 s (--stall-timeout): step 0, phase comm, "
                             "waiting "),
            std::string::npos)
      << stderr_text;
}

// The shared-memory segments a process has mapped (Open MPI's
// /dev/shm/vader_segment.* of itself and of the peers it talked to).
std::set<std::string> mapped_segments(pid_t pid) {
  std::set<std::string> out;
  std::string maps;
  if (profiler::read_small_file(fmt::format("/proc/{}/maps", pid).c_str(), &maps) != 0) return out;
  std::istringstream in(maps);
  for (std::string line; std::getline(in, line);) {
    if (const size_t at = line.find("/dev/shm/vader_segment."); at != std::string::npos) {
      out.insert(line.substr(at));
    }
  }
  return out;
}

// Issue 25 item 3: a case killed at its timeout leaves nothing of Open MPI
// behind: neither its ranks' segments in /dev/shm nor mpirun's session
// directory, even when mpirun cannot clean up within the grace (stopped
// here, as a loaded machine or a launcher stuck on a dead host would be):
// the runner removes what is left. mpirun is a wrapper that says its pid, so
// that the test names this job's files and no other job's.
TEST_F(DiagnosisTest, ACaseKilledAtItsTimeoutLeavesNoSegmentsOrSessionDirectory) {
  const fs::path pid_file = dir_ / "mpirun.pid";
  const std::string wrapper = dir_.write(
      "mpirun.sh", "#!/bin/sh\ncase \"$*\" in *' train '*) echo $$ > " + pid_file.string() +
                       ".tmp; mv " + pid_file.string() + ".tmp " + pid_file.string() +
                       ";; esac\n"
                       "exec mpirun \"$@\"\n");
  fs::permissions(wrapper, fs::perms::owner_all);
  options_.mpirun = wrapper;
  options_.measure_limits = false;
  std::optional<SuiteResult> result;
  std::thread runner([&] {
    result = run(std::string("name = \"hang\"\ntimeout_s = 60\n") + kBase +
                 "steps = 4\n[[case]]\nname = \"hung\"\ntimeout_s = 4\n"
                 "extra_args = [\"--inject-delay\", \"1:60000\"]\n");
  });
  // While the case hangs: the job's mpirun and the segments its ranks map.
  pid_t mpirun = 0;
  std::set<std::string> segments;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (segments.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (mpirun == 0 && fs::exists(pid_file)) mpirun = std::stoi(read_file(pid_file));
    if (mpirun == 0) continue;
    profiler::ProcessPoller tree(mpirun, {.read_pss = false});
    for (const auto& p : tree.poll()) {
      for (const std::string& s : mapped_segments(p.pid)) segments.insert(s);
    }
  }
  if (mpirun != 0) ::kill(mpirun, SIGSTOP);
  runner.join();
  ASSERT_NE(mpirun, 0) << "the wrapper never ran mpirun";
  ASSERT_EQ(segments.size(), 2u) << "each rank maps its own segment";
  ASSERT_TRUE(result.has_value());
  ASSERT_EQ(result->runs.size(), 1u);
  EXPECT_NE(result->runs[0].row.error.find("timed out after 4 s (killed)"), std::string::npos)
      << result->runs[0].row.error;
  for (const std::string& s : segments) EXPECT_FALSE(fs::exists(s)) << s << " was left behind";
  const fs::path sessions =
      fs::temp_directory_path() / fmt::format("ompi.{}.{}", profiler::host_name(), ::getuid());
  const fs::path session = sessions / fmt::format("pid.{}", mpirun);
  EXPECT_FALSE(fs::exists(session)) << session << " was left behind";
}

// The trace events of `path` when it is a whole JSON document with events of
// rank `rank` of both kinds (complete and memory counter); else null.
json whole_trace(const fs::path& path, int rank) {
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const std::exception&) {
    return nullptr;
  }
  bool complete = false, counter = false;
  for (const json& e : j["traceEvents"]) {
    if (e["pid"] != rank) return nullptr;
    complete = complete || e["ph"] == "X";
    counter = counter || e["ph"] == "C";
  }
  return complete && counter ? j : json(nullptr);
}

TEST_F(DiagnosisTest, AJobKilledMidRunLeavesAWholeTraceOfEveryRank) {
  SpawnOptions spawn;
  spawn.argv = testing::local_mpirun(2);
  spawn.argv.insert(
      spawn.argv.end(),
      {"--mca", "btl", "self,vader,tcp", kTrainscope, "train", "--model", "tiny", "--steps",
       "1000000", "--threads", "1", "--mode", "sharded", "--quiet", "--trace",
       (dir_ / "t.json").string(), "--status-dir", (dir_ / "status").string()});
  spawn.env = testing::kMpirunAsRoot;
  spawn.stdin_file = "/dev/null";
  spawn.stdout_file = dir_ / "stdout";
  spawn.stderr_file = dir_ / "stderr";
  spawn.own_process_group = true;
  ChildProcess job = trainscope::spawn(spawn);
  const fs::path rank_files[] = {dir_ / "t.rank0.json", dir_ / "t.rank1.json"};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (whole_trace(rank_files[0], 0).is_null() || whole_trace(rank_files[1], 1).is_null()) {
    ASSERT_FALSE(job.try_wait().has_value()) << read_file(dir_ / "stderr");
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "no trace of both ranks after 60 s";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (int rank : {0, 1}) {
    const auto pid =
        results::load_rank_status(results::rank_status_path(dir_ / "status", rank)).pid;
    ASSERT_EQ(::kill(static_cast<pid_t>(pid), SIGKILL), 0) << "rank " << rank;
  }
  ASSERT_TRUE(job.wait_for(60).has_value()) << "mpirun outlived its ranks";
  for (int rank : {0, 1}) {
    const json trace = whole_trace(rank_files[rank], rank);
    ASSERT_FALSE(trace.is_null()) << rank_files[rank];
    EXPECT_EQ(trace["otherData"]["rank"], rank);
    EXPECT_TRUE(trace["otherData"]["clock_offset_ns"].is_number_integer());
  }
  EXPECT_FALSE(fs::exists(dir_ / "t.json"));  // the merged trace is written at the end only
}

}  // namespace
}  // namespace trainscope::suites
