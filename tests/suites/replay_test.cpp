// Replayed compute (training/run/replay.h) and the suites that use it
// (replay_from): what the parser accepts and refuses, and end to end on two
// loopback ranks: a replay of a one-rank case records the source's compute
// as sleeps, reduces for real and says it was replayed.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "results/figures.h"
#include "results/results_db.h"
#include "suites/runner.h"
#include "tests/run_command.h"
#include "tests/suites/suite_parse.h"

namespace trainscope::suites {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHead =
    "name = \"r\"\ntimeout_s = 120\n[base]\nmodel = \"tiny\"\nblock = 32\nthreads = 1\n"
    "warmup_steps = 1\n";

TEST(ReplaySuiteTest, ReplayFromAnEarlierOneRankCase) {
  // fmt::format, not std::string + "...": GCC 12 warns (-Warray-bounds) on the
  // operator+ of a literal this long at -O1, wrongly (GCC bug 105329).
  const Suite s = parse_test_suite(
      fmt::format("{}{}", kHead,
                  "[[case]]\nname = \"one\"\nmode = \"naive\"\nranks = 1\nbatch = 2\n"
                  "[[case]]\nname = \"two\"\nmode = \"sharded\"\nranks = 2\nbatch_per_rank = 2\n"
                  "replay_from = \"one\"\n"));
  ASSERT_EQ(s.cases.size(), 2u);
  EXPECT_EQ(s.cases[1].replay_from, "one");
  EXPECT_EQ(s.cases[1].to_json().value("replay_from", ""), "one");
  EXPECT_FALSE(s.cases[0].to_json().contains("replay_from"));
}

TEST(ReplaySuiteTest, BadReplayFromNamesTheLine) {
  const std::string one = "[[case]]\nname = \"one\"\nmode = \"naive\"\nranks = 1\n";
  EXPECT_NE(suite_error(std::string(kHead) + one +
                        "[[case]]\nmode = \"sharded\"\nranks = 2\nreplay_from = \"nope\"\n")
                .find("t.toml:15:15: 'replay_from' names 'nope', which is no case before this one"),
            std::string::npos);
  // A replay of a replay would replay nothing measured.
  EXPECT_NE(suite_error(std::string(kHead) + one +
                        "[[case]]\nname = \"three\"\nmode = \"sharded\"\nranks = 2\n"
                        "replay_from = \"one\"\n"
                        "[[case]]\nmode = \"sharded\"\nranks = 4\nreplay_from = \"three\"\n")
                .find("'replay_from' must name a training case that computes; 'three' does not"),
            std::string::npos);
  EXPECT_NE(
      suite_error(std::string(kHead) + "[grid]\nreplay_from = [\"one\"]\n").find("replay_from"),
      std::string::npos);
  EXPECT_NE(suite_error("name = \"r\"\n[base]\nreplay_from = \"one\"\n[[case]]\nranks = 2\n")
                .find("t.toml:3:15: 'replay_from' names the case one [[case]] replays"),
            std::string::npos);
}

// A replay slowed down: the key goes with replay_from only, at least 1.
TEST(ReplaySuiteTest, ReplayTimeScaleSlowsAReplayOnly) {
  const std::string one = "[[case]]\nname = \"one\"\nmode = \"naive\"\nranks = 1\nbatch = 2\n";
  const Suite s = parse_test_suite(
      fmt::format("{}{}{}", kHead, one,
                  "[[case]]\nname = \"two\"\nmode = \"sharded\"\nranks = 2\nreplay_from = \"one\"\n"
                  "replay_time_scale = 2.5\n"));
  ASSERT_EQ(s.cases.size(), 2u);
  EXPECT_EQ(s.cases[1].train.replay_time_scale, 2.5);
  EXPECT_EQ(s.cases[0].train.replay_time_scale, 1);
  EXPECT_NE(suite_error(fmt::format("{}{}{}", kHead, one, "replay_time_scale = 2\n"))
                .find("t.toml:13:21: 'replay_time_scale' slows a replay (replay_from): this case "
                      "computes"),
            std::string::npos);
  EXPECT_NE(suite_error(fmt::format("{}{}{}", kHead, one,
                                    "[[case]]\nmode = \"sharded\"\nranks = 2\n"
                                    "replay_from = \"one\"\nreplay_time_scale = 0.5\n"))
                .find("replay_time_scale"),
            std::string::npos);
}

TEST(ReplaySuiteTest, TheReplaySuiteParses) {
  const Suite s = resolve_suite("replay");
  int replays = 0;
  std::vector<std::string> slowed;
  for (const auto& c : s.cases) {
    replays += c.replay_from.empty() ? 0 : 1;
    if (c.train.replay_time_scale != 1) slowed.push_back(c.name);
  }
  // Weak: 2, 4, 8 hosts x gige, 2.5gbe x fused, overlap from one host; the
  // real 2-host cases replayed. Strong: 2, 4, 8 hosts x gige, 2.5gbe, fused.
  EXPECT_EQ(replays, 22);
  // 2.5gbe at 8 hosts, more than 2 cores carry at full rate, 2.5 times slower.
  EXPECT_EQ(slowed, (std::vector<std::string>{"replay-h8-2.5gbe-fused", "replay-h8-2.5gbe-overlap",
                                              "replay-strong-h8-2.5gbe-fused"}));
}

TEST(ReplayTrainTest, BadReplayFileNamesIt) {
  const auto r = testing::run_shell(TRAINSCOPE_BINARY_DIR
                                    "/trainscope train --model tiny --steps 1 --quiet "
                                    "--replay-compute /nonexistent/summary.json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--replay-compute /nonexistent/summary.json"), std::string::npos)
      << r.output;
  for (const char* bad : {"--replay-time-scale 2", "--replay-time-scale 0.5 --replay-compute x"}) {
    const auto t = testing::run_shell(fmt::format(
        "{}/trainscope train --model tiny --steps 1 --quiet {}", TRAINSCOPE_BINARY_DIR, bad));
    EXPECT_EQ(t.exit_code, 2) << bad << ": " << t.output;
    EXPECT_NE(t.output.find("--replay-time-scale"), std::string::npos) << t.output;
  }
}

// End to end: the replay's phases are the source's, its reduction is real.
TEST(ReplayRunTest, TwoRanksReplayOneOverLoopback) {
  const fs::path dir =
      fs::temp_directory_path() / ("trainscope-replay-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  RunnerOptions options;
  options.db_path = dir / "results.db";
  options.trainscope_binary = TRAINSCOPE_BINARY_DIR "/trainscope";
  options.command_line = "replay_test";
  options.poll_interval_s = 0.1;
  std::FILE* sink = std::fopen("/dev/null", "w");
  options.progress = sink;
  options.out = sink;
  const Suite s = parse_suite(
      std::string(kHead) +
          "steps = 8\n[[case]]\nname = \"one\"\nmode = \"naive\"\nranks = 1\nbatch = 2\n"
          "[[case]]\nname = \"two\"\nmode = \"sharded\"\nranks = 2\nbatch_per_rank = 2\n"
          "reduce = \"overlap\"\nbucket_mb = 0.05\nreplay_from = \"one\"\n"
          "[[case]]\nname = \"slowed\"\nmode = \"sharded\"\nranks = 2\nbatch_per_rank = 2\n"
          "reduce = \"overlap\"\nbucket_mb = 0.05\nreplay_from = \"one\"\n"
          "replay_time_scale = 3\n",
      "t.toml", dir);
  const SuiteResult r = run_suite(s, options);
  std::fclose(sink);
  EXPECT_EQ(r.exit_code(), 0);
  auto db = results::ResultsDb::open_for_reading(options.db_path);
  const auto runs = db.list_runs(db.latest_suite_id().value());
  ASSERT_EQ(runs.size(), 3u);
  const auto one = db.run_summary(runs[0].id), two = db.run_summary(runs[1].id),
             slowed = db.run_summary(runs[2].id);
  ASSERT_TRUE(one && two && slowed) << runs[1].error << runs[2].error;
  EXPECT_EQ(slowed->options.value("replay_time_scale", 1.0), 3.0);
  EXPECT_EQ(one->options.value("replay_compute", "x"), "");
  EXPECT_NE(two->options.value("replay_compute", ""), "");
  ASSERT_EQ(two->steps.size(), 2u);
  // Each replayed step sleeps one of the source's measured steps: its
  // compute before the reduction (data, forward, backward) lasts at least
  // the shortest of those (the replay plans its ends; it never ends early).
  using profiler::Phase;
  auto before_reduction = [](const results::StepRecord& st) {
    return st.phases[Phase::kData] + st.phases[Phase::kForward] + st.phases[Phase::kBackward];
  };
  double shortest = 1e9;
  for (const auto& st : results::measured_steps(*one, one->steps[0])) {
    shortest = std::min(shortest, before_reduction(st));
    EXPECT_FALSE(st.backward_ready_s.empty());
  }
  for (const auto& st : two->steps[1]) {
    EXPECT_GT(st.comm_calls, 1);  // overlap's buckets, reduced for real
    EXPECT_EQ(st.backward_ready_at.size(), one->steps[0].front().backward_ready_at.size());
    EXPECT_GE(before_reduction(st), 0.95 * shortest - 50e-6) << "step " << st.step;
  }
  // Slowed 3 times: each replayed step's compute lasts 3 times a measured one.
  ASSERT_EQ(slowed->steps.size(), 2u);
  for (const auto& st : slowed->steps[1]) {
    EXPECT_GE(before_reduction(st), 3 * (0.95 * shortest - 50e-6)) << "step " << st.step;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trainscope::suites
