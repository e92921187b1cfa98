// Figures derived from run records (results/figures.h): each rank's compute
// and wait, the straggler figure per step and which rank is flagged.
#include "results/figures.h"

#include <cmath>

#include <gtest/gtest.h>

#include "tests/results/sample_records.h"

namespace trainscope::results {
namespace {

using profiler::Phase;

// Two ranks, 6 steps (the first a warm-up) of `compute_s` each outside the
// comm phase; rank `slow` computes `extra_s` more and the other waits for it.
RunSummary two_ranks(double compute_s, int slow = -1, double extra_s = 0) {
  RunSummary s = testing::sample_summary(2, 6);
  s.options["warmup_steps"] = 1;
  for (int r = 0; r < 2; ++r) {
    for (StepRecord& step : s.steps[r]) {
      const double wait = 0.002 + (r != slow && slow >= 0 ? extra_s : 0);
      const double compute = compute_s + (r == slow ? extra_s : 0) + (step.step == 0 ? 1.0 : 0);
      step.phases = {};
      step.phases[Phase::kForward] = compute;
      step.phases[Phase::kComm] = wait;
      step.step_time_s = compute + wait;
    }
  }
  return s;
}

TEST(FiguresTest, ComputeIsTheStepOutsideCollectives) {
  StepRecord step;
  step.step_time_s = 0.25;
  step.phases[Phase::kComm] = 0.05;
  EXPECT_DOUBLE_EQ(step_compute_s(step), 0.2);
}

TEST(FiguresTest, ASlowRankIsNamedWithHowMuchAboveTheMedian) {
  const RunSummary s = two_ranks(0.010, /*slow=*/1, /*extra_s=*/0.050);
  const RunFigures f = run_figures(&s, {});
  ASSERT_EQ(f.rank_times.size(), 2u);
  const RankTimes& fast = f.rank_times[0];
  const RankTimes& slow = f.rank_times[1];
  EXPECT_NEAR(fast.compute_s, 0.010, 1e-12);
  EXPECT_NEAR(fast.wait_s, 0.052, 1e-12);
  EXPECT_NEAR(slow.compute_s, 0.060, 1e-12);
  EXPECT_NEAR(slow.wait_s, 0.002, 1e-12);
  // The median of 10 and 60 ms is 35 ms: 60/35 - 1 = 71% above.
  EXPECT_NEAR(slow.compute_vs_median, 0.060 / 0.035 - 1, 1e-9);
  EXPECT_TRUE(slow.straggler);
  EXPECT_FALSE(fast.straggler);
  EXPECT_EQ(straggler_note(slow), "rank 1 computes 71% above the median");
  // The warm-up step (1 s more compute on both) is left out.
  EXPECT_NEAR(f.straggler_s, 0.050, 1e-12);
  const std::vector<double> per_step = straggler_per_step(s);
  ASSERT_EQ(per_step.size(), 5u);
  for (double x : per_step) EXPECT_NEAR(x, 0.050, 1e-12);
}

// The 2-rank optimizer anomaly of issue 26: the slow phase alternates
// between ranks, so each rank's wait splits into transfer (the least wait
// of the step) and waiting for the partner, step by step.
TEST(FiguresTest, AWaitSplitsIntoTransferAndWaitingForTheSlowerRank) {
  RunSummary s = two_ranks(0.010);
  for (int r = 0; r < 2; ++r) {
    for (StepRecord& step : s.steps[r]) {
      const bool slow_here = step.step % 2 == r;  // rank 0 slow on even steps, rank 1 on odd
      step.phases[Phase::kOptimizer] = slow_here ? 0.500 : 0.100;
      step.phases[Phase::kComm] = 0.003 + (slow_here ? 0.0 : 0.400);
      step.step_time_s =
          step.phases[Phase::kForward] + step.phases[Phase::kOptimizer] + step.phases[Phase::kComm];
    }
  }
  // 5 measured steps (1..5): rank 0 slow on 2 and 4, rank 1 on 1, 3 and 5.
  const RunFigures f = run_figures(&s, {});
  ASSERT_EQ(f.rank_times.size(), 2u);
  for (const RankTimes& t : f.rank_times) {
    EXPECT_NEAR(t.transfer_s, 0.003, 1e-12) << t.rank;
    EXPECT_NEAR(t.waiting_for_others_s + t.transfer_s, t.wait_s, 1e-12) << t.rank;
  }
  EXPECT_NEAR(f.rank_times[0].waiting_for_others_s, 0.400, 1e-12) << "waits on 3 of 5 steps";
  EXPECT_NEAR(f.rank_times[1].waiting_for_others_s, 0.0, 1e-12) << "waits on 2 of 5 steps";
  EXPECT_NEAR(f.rank_times[0].optimizer_s, 0.100, 1e-12);
  EXPECT_NEAR(f.rank_times[1].optimizer_s, 0.500, 1e-12);
}

// The ranks of a host add up against its cores; the busiest host counts.
TEST(FiguresTest, HostCpuBusyIsTheBusiestHostsRanksOverItsCores) {
  RunSummary s = two_ranks(0.010);
  for (RankResult& r : s.ranks) {
    r.host = "box";
    r.load_start.cores = 2;
    r.steps_wall_s = 4.0;
  }
  s.ranks[0].cpu_s = 3.0;  // 0.75 of a core
  s.ranks[1].cpu_s = 3.6;  // 0.9
  EXPECT_NEAR(run_figures(&s, {}).host_cpu_busy, (0.75 + 0.9) / 2, 1e-12);
  // On hosts of their own, each rank against its host's 2 cores.
  s.ranks[1].host = "other";
  EXPECT_NEAR(run_figures(&s, {}).host_cpu_busy, 0.9 / 2, 1e-12);
  // A rank that did not record its CPU time (an older summary): unknown.
  s.ranks[0].cpu_s = kNaN;
  EXPECT_TRUE(std::isnan(run_figures(&s, {}).host_cpu_busy));
}

// Eight ranks on 2 cores load the machine, unless they replay: sleeping
// their compute, they count as the cores their CPU time kept busy (the
// replay suite's 4- and 8-host cases were all marked loaded).
TEST(FiguresTest, SleepingReplayRanksAreNoLoad) {
  RunSummary s = testing::sample_summary(8, 6);
  s.threads_per_rank = 1;
  for (RankResult& r : s.ranks) {
    r.host = "box";
    r.load_start = r.load_end = {0.5, 0.5, 0.5, 1, 0, 2};
    r.steps_wall_s = 4.0;
    r.cpu_s = 0.5;  // an eighth of a core each: one core in all
  }
  EXPECT_NE(run_figures(&s, {}).load.loaded, "");  // 8 computing ranks > 2 cores
  s.options["replay_compute"] = "/tmp/one-host.json";
  EXPECT_EQ(run_figures(&s, {}).load.loaded, "");
  for (RankResult& r : s.ranks) r.cpu_s = 1.5;  // 3 cores busy in all: loaded again
  EXPECT_NE(run_figures(&s, {}).load.loaded, "");
}

// A replay's 8 ranks on virtual hosts ts-h0 .. ts-h7 of one 2-core machine,
// each `cpu_s` CPU seconds over 4 s of steps.
RunSummary replay_on_eight_virtual_hosts(double cpu_s) {
  RunSummary s = testing::sample_summary(8, 6);
  s.threads_per_rank = 1;
  s.options["replay_compute"] = "/tmp/one-host.json";
  for (RankResult& r : s.ranks) {
    r.host = "ts-h" + std::to_string(r.rank);
    r.machine = "boot-1";
    r.load_start = r.load_end = {0.5, 0.5, 0.5, 1, 0, 2};
    r.steps_wall_s = 4.0;
    r.cpu_s = cpu_s;
  }
  return s;
}

// The virtual hosts of one cluster have host names of their own (ts-h0 ..
// ts-h7) and share one machine's cores: their ranks add up there. The
// replay at 8 hosts of 2026-11-28 kept 1.6 of 2 cores busy, and each host's
// 0.2 read as 10% of its CPUs.
TEST(FiguresTest, VirtualHostsOfOneMachineShareItsCores) {
  RunSummary s = replay_on_eight_virtual_hosts(3.8);  // 0.95 of a core each: 7.6 of 2 cores
  EXPECT_NEAR(run_figures(&s, {}).host_cpu_busy, 3.8, 1e-9);
  EXPECT_NE(run_figures(&s, {}).load.loaded, "");
  for (RankResult& r : s.ranks) r.cpu_s = 0.8;  // 1.6 of 2 cores
  EXPECT_NEAR(run_figures(&s, {}).host_cpu_busy, 0.8, 1e-9);
  EXPECT_EQ(run_figures(&s, {}).load.loaded, "");
  // Without a machine (older summaries) each host stands for its own.
  for (RankResult& r : s.ranks) r.machine.clear();
  EXPECT_NEAR(run_figures(&s, {}).host_cpu_busy, 0.1, 1e-9);
}

// The kernel carries a virtual cluster's traffic in softirqs that no rank's
// CPU time counts: the replay at 8 hosts of 2.5gbe (2026-11-28) kept the
// machine 87% busy while its ranks' own time was less. The machine's
// /proc/stat share counts where it is the higher.
TEST(FiguresTest, TheMachinesOwnBusyTimeCountsWhereTheRanksMissIt) {
  RunSummary s = replay_on_eight_virtual_hosts(0.4);  // 0.1 of a core each: 0.8 of 2, 40%
  EXPECT_NEAR(run_figures(&s, {}).host_cpu_busy, 0.4, 1e-9);
  for (RankResult& r : s.ranks) {
    r.load_start.cpu_ticks_total = 10000;
    r.load_start.cpu_ticks_busy = 3000;
    r.load_start.cpu_ticks_softirq = 100;
    r.load_end.cpu_ticks_total = 10800;  // 4 s of 2 CPUs at 100 ticks a second
    r.load_end.cpu_ticks_busy = 3000 + 760;
    r.load_end.cpu_ticks_softirq = 100 + 120;
  }
  EXPECT_NEAR(run_figures(&s, {}).host_cpu_busy, 0.95, 1e-9);
  // Where the ranks' own share is the higher, it stands.
  for (RankResult& r : s.ranks) r.cpu_s = 3.9;
  EXPECT_NEAR(run_figures(&s, {}).host_cpu_busy, 3.9, 1e-9);
  // A reading without the ticks (an older summary) leaves the ranks' share.
  for (RankResult& r : s.ranks) {
    r.cpu_s = 0.4;
    r.load_end.cpu_ticks_total = -1;
  }
  EXPECT_NEAR(run_figures(&s, {}).host_cpu_busy, 0.4, 1e-9);
}

TEST(FiguresTest, RanksThatComputeAlikeAreNotFlagged) {
  const RunSummary s = two_ranks(0.010);
  const RunFigures f = run_figures(&s, {});
  for (const RankTimes& r : f.rank_times) EXPECT_FALSE(r.straggler) << r.rank;
  EXPECT_NEAR(f.straggler_s, 0.0, 1e-12);
}

TEST(FiguresTest, TenPercentOfASubMillisecondStepIsNoise) {
  // Rank 1 is 40% above the median but only 0.2 ms: not a rank to look at.
  const RunSummary small_steps = two_ranks(0.0005, 1, 0.0004);
  const RunFigures small = run_figures(&small_steps, {});
  EXPECT_FALSE(small.rank_times[1].straggler);
  EXPECT_GT(small.rank_times[1].compute_vs_median, kStragglerThreshold);
  // The same share of a longer step is.
  const RunSummary large_steps = two_ranks(0.005, 1, 0.004);
  const RunFigures large = run_figures(&large_steps, {});
  EXPECT_TRUE(large.rank_times[1].straggler);
}

TEST(FiguresTest, OneRankHasNothingToCompareWith) {
  const RunSummary s = testing::sample_summary(1, 4);
  const RunFigures f = run_figures(&s, {});
  ASSERT_EQ(f.rank_times.size(), 1u);
  EXPECT_FALSE(f.rank_times[0].straggler);
  EXPECT_DOUBLE_EQ(f.straggler_s, 0.0);
}

}  // namespace
}  // namespace trainscope::results
