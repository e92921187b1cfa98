#include "profiler/step_timer.h"

#include <gtest/gtest.h>

#include <chrono>

#include <nlohmann/json.hpp>

namespace trainscope::profiler {
namespace {

// Busy-wait rather than sleep: precise to microseconds, so the tests can use
// tight bounds while staying a few milliseconds long.
void spin_for(double seconds) {
  const int64_t until = trace_clock_ns() + static_cast<int64_t>(seconds * 1e9);
  while (trace_clock_ns() < until) {}
}

TEST(StepTimerTest, PhaseNamesFollowTheEnum) {
  EXPECT_EQ(phase_name(Phase::kData), "data");
  EXPECT_EQ(phase_name(Phase::kComm), "comm");
  EXPECT_EQ(phase_name(Phase::kCheckpoint), "checkpoint");
}

TEST(StepTimerTest, CommNestedInBackwardIsSubtractedFromExclusive) {
  StepTimer timer;
  timer.begin_step(0);
  {
    auto b = timer.phase(Phase::kBackward);
    spin_for(0.004);
    {
      auto c = timer.phase(Phase::kComm);
      spin_for(0.003);
    }
    spin_for(0.002);
  }
  timer.end_step();
  const StepTimes& s = timer.steps().at(0);
  EXPECT_GE(s.seconds(Phase::kBackward), 0.009);
  // Upper bounds come from the step's wall time, not from expected durations:
  // a loaded machine can preempt the spin loops.
  EXPECT_LE(s.seconds(Phase::kBackward), s.wall_seconds);
  EXPECT_GE(s.seconds(Phase::kComm), 0.003);
  EXPECT_DOUBLE_EQ(s.exclusive(Phase::kComm), s.seconds(Phase::kComm));
  EXPECT_NEAR(s.exclusive(Phase::kBackward) + s.seconds(Phase::kComm), s.seconds(Phase::kBackward),
              1e-9);
  EXPECT_GE(s.exclusive(Phase::kBackward), 0.006);
  EXPECT_EQ(s.scope_counts[static_cast<int>(Phase::kComm)], 1);
  EXPECT_GE(s.wall_seconds, s.seconds(Phase::kBackward));
  EXPECT_GE(s.untracked_seconds(), 0.0);
}

TEST(StepTimerTest, SamePhaseNestedIsNotCountedTwice) {
  StepTimer timer;
  timer.begin_step(0);
  {
    auto outer = timer.phase(Phase::kComm);
    spin_for(0.002);
    auto inner = timer.phase(Phase::kComm);
    spin_for(0.002);
  }
  timer.end_step();
  const StepTimes& s = timer.steps().at(0);
  EXPECT_GE(s.seconds(Phase::kComm), 0.004);
  // Counted twice, inclusive would be outer + inner > the step's wall time
  // and exceed the exclusive sum.
  EXPECT_LE(s.seconds(Phase::kComm), s.wall_seconds);
  EXPECT_NEAR(s.exclusive(Phase::kComm), s.seconds(Phase::kComm), 1e-9);
  EXPECT_EQ(s.scope_counts[static_cast<int>(Phase::kComm)], 2);
}

TEST(StepTimerTest, RegionsAnnotateWithoutTakingPhaseTime) {
  StepTimer timer;
  const RegionId attn = timer.region_id("attention");
  EXPECT_EQ(timer.region_id("attention"), attn);
  timer.begin_step(5);
  {
    auto f = timer.phase(Phase::kForward);
    auto r = timer.region(attn);
    spin_for(0.003);
  }
  timer.end_step();
  const StepTimes& s = timer.steps().at(0);
  EXPECT_EQ(s.step, 5);
  ASSERT_EQ(s.region_seconds.size(), 1u);
  EXPECT_GE(s.region_seconds[0], 0.003);
  EXPECT_NEAR(s.exclusive(Phase::kForward), s.seconds(Phase::kForward), 1e-9);
  EXPECT_GE(s.seconds(Phase::kForward), s.region_seconds[0]);
}

TEST(StepTimerTest, RunTimesExcludeWarmupSteps) {
  StepTimer timer({.warmup_steps = 1});
  for (int step = 0; step < 4; ++step) {
    timer.begin_step(step);
    {
      auto d = timer.phase(Phase::kData);
      spin_for(step == 0 ? 0.015 : 0.001);
    }
    timer.end_step();
  }
  const RunTimes run = timer.run_times();
  EXPECT_EQ(run.warmup_steps, 1);
  EXPECT_EQ(run.measured_steps, 3);
  EXPECT_EQ(run[Phase::kData].inclusive.count, 3);
  // Exactly steps 1..3 are summarized (the slow first step is out).
  std::vector<double> kept;
  for (int i = 1; i < 4; ++i) kept.push_back(timer.steps()[i].seconds(Phase::kData));
  const Summary expected = summarize(kept);
  EXPECT_DOUBLE_EQ(run[Phase::kData].inclusive.max, expected.max);
  EXPECT_DOUBLE_EQ(run[Phase::kData].inclusive.median, expected.median);
  EXPECT_GE(timer.steps()[0].seconds(Phase::kData), 0.015);
  EXPECT_GE(run[Phase::kData].inclusive.min, 0.001);
  EXPECT_EQ(run[Phase::kOptimizer].inclusive.max, 0.0);
  EXPECT_GE(run.wall.mean, run[Phase::kData].inclusive.mean);
  // The JSON export carries the same figures.
  const nlohmann::json j = to_json(run);
  EXPECT_EQ(j["measured_steps"], 3);
  EXPECT_DOUBLE_EQ(j["phases"]["data"]["inclusive"]["max"].get<double>(),
                   run[Phase::kData].inclusive.max);
  const nlohmann::json js = to_json(timer.steps()[0], timer.region_names());
  EXPECT_GE(js["inclusive_seconds"]["data"].get<double>(), 0.015);
}

TEST(StepTimerTest, ScopesOutsideStepsAreKeptApart) {
  StepTimer timer;
  {
    auto c = timer.phase(Phase::kCheckpoint);
    spin_for(0.001);
  }
  timer.begin_step(0);
  timer.end_step();
  EXPECT_EQ(timer.steps().at(0).seconds(Phase::kCheckpoint), 0.0);
  EXPECT_GE(timer.outside_steps().seconds(Phase::kCheckpoint), 0.001);
}

TEST(StepTimerTest, ClosedScopesFeedAnEnabledTraceRecorder) {
  TraceRecorder recorder(0, "host");
  StepTimer timer;
  timer.set_trace_recorder(&recorder);
  const RegionId r = timer.region_id("bucket_pack");
  timer.begin_step(7);
  {
    auto b = timer.phase(Phase::kBackward);
    auto c = timer.phase(Phase::kComm, {.bytes = 4096, .bucket = 2});
  }
  { auto p = timer.region(r); }
  timer.end_step();
  const std::vector<TraceEvent> events = recorder.events();
  const std::vector<std::string> names = recorder.names();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(names[events[0].name], "comm");  // inner scope closes first
  EXPECT_EQ(events[0].track, Track::kComm);
  EXPECT_EQ(events[0].args.bytes, 4096);
  EXPECT_EQ(events[0].args.bucket, 2);
  EXPECT_EQ(events[0].step, 7);
  EXPECT_EQ(names[events[1].name], "backward");
  EXPECT_EQ(events[1].track, Track::kCompute);
  EXPECT_LE(events[1].start_ns, events[0].start_ns);
  EXPECT_EQ(names[events[2].name], "bucket_pack");

  recorder.set_enabled(false);
  timer.begin_step(8);
  { auto f = timer.phase(Phase::kForward); }
  timer.end_step();
  EXPECT_EQ(recorder.size(), 3u);
}

TEST(StepTimerTest, LivePositionFollowsStepsAndTheInnermostPhase) {
  StepTimer timer;
  LivePosition live;
  auto phase_of = [&] { return live.phase.load(); };
  timer.set_live_position(&live);
  EXPECT_EQ(live.step.load(), -1);
  EXPECT_EQ(phase_of(), -1);
  timer.begin_step(4);
  EXPECT_EQ(live.step.load(), 4);
  EXPECT_GT(live.step_start_ns.load(), 0);
  EXPECT_EQ(live.changed_ns.load(), live.step_start_ns.load());
  {
    spin_for(0.001);
    auto b = timer.phase(Phase::kBackward);
    EXPECT_EQ(phase_of(), static_cast<int>(Phase::kBackward));
    EXPECT_GE(live.changed_ns.load(), live.step_start_ns.load() + 1'000'000);
    const RegionId region = timer.region_id("attention");
    {
      auto c = timer.phase(Phase::kComm);
      auto r = timer.region(region);  // regions are not phases
      EXPECT_EQ(phase_of(), static_cast<int>(Phase::kComm));
    }
    EXPECT_EQ(phase_of(), static_cast<int>(Phase::kBackward));
  }
  EXPECT_EQ(phase_of(), -1);
  timer.end_step();
  EXPECT_EQ(live.step.load(), -1);
  timer.set_live_position(nullptr);
  timer.begin_step(5);
  EXPECT_EQ(live.step.load(), -1);  // detached
  timer.end_step();
}

TEST(StepTimerDeathTest, OutOfOrderCloseAborts) {
  EXPECT_DEATH(
      {
        StepTimer timer;
        auto a = timer.phase(Phase::kForward);
        auto b = timer.phase(Phase::kBackward);
        a.stop();
      },
      "reverse order");
}

}  // namespace
}  // namespace trainscope::profiler
