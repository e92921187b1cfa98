#include "training/run/replay.h"

#include <thread>

#include <fmt/format.h>

#include "base/check.h"
#include "base/json_reader.h"
#include "profiler/step_timer.h"
#include "results/figures.h"
#include "results/records.h"

namespace trainscope::training {

ComputeReplay ComputeReplay::load(const std::string& path, int64_t trainable, int rank,
                                  double time_scale) {
  TS_CHECK(time_scale >= 1) << "--replay-time-scale " << time_scale;
  results::RunSummary run;
  try {
    results::from_json(read_json_file(path), run);
  } catch (const Error& e) {
    throw Error(fmt::format("--replay-compute {}: not a run summary: {}", path, e.what()));
  }
  std::erase_if(run.steps, [](const auto& steps) { return steps.empty(); });
  if (run.steps.empty()) {
    throw Error(fmt::format("--replay-compute {}: the summary holds no steps", path));
  }
  const auto& source = run.steps[static_cast<std::size_t>(rank) % run.steps.size()];
  ComputeReplay replay;
  using profiler::Phase;
  for (const results::StepRecord& s : results::measured_steps(run, source)) {
    if (s.backward_ready_s.empty() || s.backward_ready_s.size() != s.backward_ready_at.size()) {
      throw Error(
          fmt::format("--replay-compute {}: step {} has no record of when backward finalised its "
                      "gradients (a summary written before backward_ready_s was recorded)",
                      path, s.step));
    }
    for (int64_t at : s.backward_ready_at) {
      if (at < 0 || at >= trainable) {
        throw Error(
            fmt::format("--replay-compute {}: step {} finalised gradients at element {}, "
                        "outside this run's {} (a run of another model?)",
                        path, s.step, at, trainable));
      }
    }
    const double k = time_scale;  // every duration below
    std::vector<double> ready_s = s.backward_ready_s;
    for (double& t : ready_s) t *= k;
    replay.steps_.push_back({.data_s = k * s.phases[Phase::kData],
                             .forward_s = k * s.phases[Phase::kForward],
                             .backward_s = k * s.phases[Phase::kBackward],
                             .optimizer_s = k * s.phases[Phase::kOptimizer],
                             .head_backward_s = k * s.head_backward_s,
                             .loss = s.loss,
                             .grad_norm = s.grad_norm,
                             .ready_s = std::move(ready_s),
                             .ready_at = s.backward_ready_at});
  }
  if (replay.steps_.empty()) {
    throw Error(fmt::format("--replay-compute {}: no measured step after the warm-up", path));
  }
  return replay;
}

const ReplayedStep& ComputeReplay::step_for(int rank, int64_t step) const {
  // splitmix64 of (rank, step): the same draws on every run and rank count.
  uint64_t x = (static_cast<uint64_t>(rank) << 32) ^ static_cast<uint64_t>(step);
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return steps_[x % steps_.size()];
}

namespace {
std::chrono::steady_clock::duration from_seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}
}  // namespace

void ReplayClock::wait(double seconds) {
  planned_ += from_seconds(seconds);
  std::this_thread::sleep_until(planned_);
}

void ReplayClock::defer(double seconds) { planned_ += from_seconds(seconds); }

}  // namespace trainscope::training
