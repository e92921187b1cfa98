// The work lane's counting inside the process: which phases callgrind
// collects, and when each phase's cost is dumped (profiler/work_counter.h).
#include "profiler/work_counter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "profiler/step_timer.h"

namespace trainscope::profiler {
namespace {

// A step as the trainer runs it: data, forward, backward with comm nested
// in it twice (overlap's buckets), comm after it, the optimizer, an eval.
std::vector<std::string> events_of_a_step() {
  std::vector<std::string> events;
  WorkCounter counter(1, [&](std::string_view e) { events.emplace_back(e); });
  StepTimer timer;
  timer.set_work_counter(&counter);
  { auto outside = timer.phase(Phase::kCheckpoint); }  // before any step: not counted
  timer.begin_step(3);
  { auto s = timer.phase(Phase::kData); }
  { auto s = timer.phase(Phase::kForward); }
  {
    auto s = timer.phase(Phase::kBackward);
    { auto c = timer.phase(Phase::kComm); }
    { auto c = timer.phase(Phase::kComm); }
  }
  { auto s = timer.phase(Phase::kComm); }
  { auto s = timer.phase(Phase::kOptimizer); }
  { auto s = timer.phase(Phase::kEval); }
  timer.end_step();
  return events;
}

TEST(WorkCounterTest, CollectsComputePhasesAndDumpsEachOnce) {
  const std::vector<std::string> expected = {
      "instrumentation on", "collect on", "collect off",  // data
      "dump trainscope rank 1 step 3 phase data", "collect on", "collect off",  // forward
      "dump trainscope rank 1 step 3 phase forward", "collect on",  // backward
      // comm nested in backward pauses it without a dump; backward goes on.
      "collect off", "collect on", "collect off", "collect on", "collect off",
      // comm after backward collects nothing; the optimizer does.
      "dump trainscope rank 1 step 3 phase backward", "collect on", "collect off",
      // the eval is not counted; the optimizer's cost is dumped at the step's end.
      "dump trainscope rank 1 step 3 phase optimizer"};
  EXPECT_EQ(events_of_a_step(), expected);
}

TEST(WorkCounterTest, IsOffOutsideValgrind) {
  ::setenv(kCountWorkVariable, "1", 1);
  EXPECT_EQ(make_work_counter(0), nullptr);  // asked, but not under valgrind
  ::unsetenv(kCountWorkVariable);
}

TEST(WorkCounterTest, DumpNamesRoundTrip) {
  WorkDumpName n;
  ASSERT_TRUE(parse_work_dump_name(work_dump_name(2, 17, static_cast<int>(Phase::kBackward)), &n));
  EXPECT_EQ(n.rank, 2);
  EXPECT_EQ(n.step, 17);
  EXPECT_EQ(n.phase, "backward");
  for (const char* other : {"Program termination", "trainscope rank x step 1 phase data",
                            "trainscope rank 1 step 2 phase lunch", "trainscope rank 1 step 2"}) {
    EXPECT_FALSE(parse_work_dump_name(other, &n)) << other;
  }
}

}  // namespace
}  // namespace trainscope::profiler
