// Overheads of the profiler, to check it does not distort what it measures.
//
//   build-prof/bench/profiler_bench --benchmark_min_time=0.2
//
// BM_PhaseScope*        ns per scoped phase timer (open + close), plain, nested,
//                       and with a TraceRecorder recording every scope. A ~1 s
//                       step with ~100 scopes must stay far under 1%.
// BM_MemoryRecord*      one per-step memory record, with and without /proc.
// BM_PollTree8          CPU time of one ProcessPoller::poll() over a tree of 8
//                       child processes holding 32 MiB each; the counter
//                       core_pct_at_200ms is that CPU time as a percentage of
//                       one core when polling every 200 ms (target < 1%).
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "profiler/memory_tracker.h"
#include "profiler/process_poller.h"
#include "profiler/stats.h"
#include "profiler/step_timer.h"
#include "profiler/trace.h"

namespace trainscope::profiler {
namespace {

double process_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void BM_PhaseScope(benchmark::State& state) {
  StepTimer timer;
  timer.begin_step(0);
  for (auto _ : state) {
    auto s = timer.phase(Phase::kForward);
  }
  timer.end_step();
  benchmark::DoNotOptimize(timer.steps().back().wall_seconds);
}
BENCHMARK(BM_PhaseScope);

void BM_PhaseScopeNested(benchmark::State& state) {
  StepTimer timer;
  const RegionId region = timer.region_id("bucket");
  timer.begin_step(0);
  auto backward = timer.phase(Phase::kBackward);
  const int64_t start = trace_clock_ns();
  for (auto _ : state) {
    auto r = timer.region(region);
    auto c = timer.phase(Phase::kComm, {.bytes = 1 << 20, .bucket = 1});
  }
  const int64_t elapsed = trace_clock_ns() - start;
  backward.stop();
  timer.end_step();
  state.counters["wall_ns_per_scope"] =
      static_cast<double>(elapsed) / (2.0 * static_cast<double>(state.iterations()));
}
BENCHMARK(BM_PhaseScopeNested);

void BM_PhaseScopeTraced(benchmark::State& state) {
  TraceRecorder recorder(0, "bench", 1 << 16);
  StepTimer timer;
  timer.set_trace_recorder(&recorder);
  timer.begin_step(0);
  for (auto _ : state) {
    auto s = timer.phase(Phase::kForward);
    // Keep within the reserve, as a traced run of bounded length does.
    if (recorder.size() == (1 << 16)) recorder.clear();
  }
  timer.end_step();
}
BENCHMARK(BM_PhaseScopeTraced);

void BM_StepOf100Scopes(benchmark::State& state) {
  StepTimer timer;
  int64_t step = 0;
  const double cpu_start = process_cpu_seconds();
  for (auto _ : state) {
    timer.begin_step(step++);
    for (int i = 0; i < 25; ++i) {
      auto f = timer.phase(Phase::kForward);
    }
    {
      auto b = timer.phase(Phase::kBackward);
      for (int i = 0; i < 49; ++i) {
        auto c = timer.phase(Phase::kComm);
      }
    }
    for (int i = 0; i < 25; ++i) {
      auto o = timer.phase(Phase::kOptimizer);
    }
    timer.end_step();
    if (timer.steps().size() > 100000) timer.clear();
  }
  // CPU seconds the 100 scopes cost per step, as a percentage of a 1 s step.
  const double cpu_per_step =
      (process_cpu_seconds() - cpu_start) / static_cast<double>(state.iterations());
  state.counters["pct_of_1s_step"] = cpu_per_step / 1.0 * 100.0;
}
BENCHMARK(BM_StepOf100Scopes);

void BM_MemoryRecordTracked(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(memory_record(0, false));
}
BENCHMARK(BM_MemoryRecordTracked);

void BM_MemoryRecordWithProcess(benchmark::State& state) {
  const bool with_pss = state.range(0) != 0;
  for (auto _ : state) benchmark::DoNotOptimize(memory_record(0, true, with_pss));
}
BENCHMARK(BM_MemoryRecordWithProcess)->Arg(0)->Arg(1);

void BM_Summarize1000(benchmark::State& state) {
  std::vector<double> x(1000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((i * 7919) % 1000);
  for (auto _ : state) benchmark::DoNotOptimize(summarize(x));
}
BENCHMARK(BM_Summarize1000);

void BM_PollTree8(benchmark::State& state) {
  constexpr int kChildren = 8;
  constexpr std::size_t kChildBytes = 32 << 20;
  std::vector<pid_t> children;
  for (int i = 0; i < kChildren; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      char* p = static_cast<char*>(std::malloc(kChildBytes));
      std::memset(p, i + 1, kChildBytes);
      ::pause();
      ::_exit(0);
    }
    children.push_back(pid);
  }
  ::usleep(300000);  // let the children touch their memory
  PollerOptions options;
  options.read_pss = state.range(0) != 0;
  options.include_root = false;
  ProcessPoller poller(::getpid(), options);
  poller.poll();  // classification happens on first sight: not steady state
  int64_t seen = 0;
  const double cpu_start = process_cpu_seconds();
  for (auto _ : state) seen += static_cast<int64_t>(poller.poll().size());
  const double cpu_per_poll =
      (process_cpu_seconds() - cpu_start) / static_cast<double>(state.iterations());
  for (pid_t pid : children) ::kill(pid, SIGKILL);
  for (pid_t pid : children) ::waitpid(pid, nullptr, 0);
  if (seen != kChildren * state.iterations()) state.SkipWithError("poller did not see 8 children");
  state.counters["cpu_us_per_poll"] = cpu_per_poll * 1e6;
  state.counters["core_pct_at_200ms"] = cpu_per_poll / 0.2 * 100.0;
}
BENCHMARK(BM_PollTree8)->Arg(1)->Arg(0)->ArgName("pss")->Iterations(300);

}  // namespace
}  // namespace trainscope::profiler

BENCHMARK_MAIN();
