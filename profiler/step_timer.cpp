#include "profiler/step_timer.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "base/check.h"
#include "profiler/steady_state.h"

namespace trainscope::profiler {
namespace {

constexpr int kPhaseFrame = 0;
constexpr int kRegionFrame = 1;

double ns_to_s(int64_t ns) { return static_cast<double>(ns) * 1e-9; }

}  // namespace

double StepTimes::untracked_seconds() const {
  double phased = 0;
  for (double s : exclusive_seconds) phased += s;
  return wall_seconds - phased;
}

StepTimer::StepTimer(StepTimerOptions options) : options_(options) {
  TS_CHECK(options_.max_depth > 0) << "max_depth " << options_.max_depth;
  TS_CHECK(options_.warmup_steps >= 0) << "warmup_steps " << options_.warmup_steps;
  stack_.resize(static_cast<std::size_t>(options_.max_depth));
}

void StepTimer::set_trace_recorder(TraceRecorder* recorder) {
  recorder_ = recorder;
  if (recorder_ == nullptr) return;
  for (int i = 0; i < kNumPhases; ++i) phase_trace_names_[i] = recorder_->intern(kPhaseNames[i]);
  for (std::size_t i = 0; i < region_names_.size(); ++i)
    region_trace_names_[i] = recorder_->intern(region_names_[i]);
}

void StepTimer::set_live_position(LivePosition* position) {
  live_ = position;
  if (live_ == nullptr) return;
  live_->step.store(in_step_ ? pending_.step : -1, std::memory_order_relaxed);
  live_->step_start_ns.store(step_start_ns_, std::memory_order_relaxed);
  publish_phase(trace_clock_ns());
}

int32_t StepTimer::innermost_phase() const {
  for (int i = depth_ - 1; i >= 0; --i) {
    if (stack_[i].kind == kPhaseFrame) return stack_[i].id;
  }
  return -1;
}

void StepTimer::publish_phase(int64_t now_ns) const {
  if (work_ != nullptr && in_step_) work_->on_phase(pending_.step, innermost_phase());
  if (live_ == nullptr) return;
  live_->phase.store(innermost_phase(), std::memory_order_relaxed);
  live_->changed_ns.store(now_ns, std::memory_order_relaxed);
}

RegionId StepTimer::region_id(std::string_view name) {
  for (std::size_t i = 0; i < region_names_.size(); ++i)
    if (region_names_[i] == name) return static_cast<RegionId>(i);
  region_names_.emplace_back(name);
  open_region_count_.push_back(0);
  region_trace_names_.push_back(recorder_ != nullptr ? recorder_->intern(name) : 0);
  return static_cast<RegionId>(region_names_.size() - 1);
}

void StepTimer::begin_step(int64_t step) {
  TS_CHECK(!in_step_) << "begin_step(" << step << ") while step " << pending_.step << " is open";
  pending_.step = step;
  pending_.wall_seconds = 0;
  pending_.inclusive_seconds.fill(0);
  pending_.exclusive_seconds.fill(0);
  pending_.scope_counts.fill(0);
  pending_.region_seconds.assign(region_names_.size(), 0.0);
  in_step_ = true;
  step_start_ns_ = trace_clock_ns();
  if (live_ != nullptr) {
    live_->step_start_ns.store(step_start_ns_, std::memory_order_relaxed);
    live_->changed_ns.store(step_start_ns_, std::memory_order_relaxed);
    live_->step.store(step, std::memory_order_relaxed);
  }
}

void StepTimer::end_step() {
  const int64_t end = trace_clock_ns();
  TS_CHECK(in_step_) << "end_step() without begin_step()";
  pending_.wall_seconds = ns_to_s(end - step_start_ns_);
  steps_.push_back(pending_);
  in_step_ = false;
  if (work_ != nullptr) work_->on_step_end(pending_.step);
  if (live_ != nullptr) {
    live_->changed_ns.store(end, std::memory_order_relaxed);
    live_->step.store(-1, std::memory_order_relaxed);
  }
}

StepTimer::Scope StepTimer::phase(Phase phase, TraceArgs args) {
  const Track track = phase == Phase::kComm ? Track::kComm : Track::kCompute;
  return Scope(this, open(kPhaseFrame, static_cast<int32_t>(phase), track, args));
}

StepTimer::Scope StepTimer::region(RegionId id, Track track, TraceArgs args) {
  TS_CHECK(id >= 0 && id < static_cast<RegionId>(region_names_.size())) << "unknown region " << id;
  return Scope(this, open(kRegionFrame, id, track, args));
}

int StepTimer::open(int kind, int32_t id, Track track, TraceArgs args) {
  TS_CHECK(depth_ < options_.max_depth)
      << "scopes nested deeper than max_depth " << options_.max_depth;
  if (kind == kPhaseFrame) {
    ++open_phase_count_[id];
  } else {
    ++open_region_count_[id];
  }
  Frame& f = stack_[depth_];
  f.kind = kind;
  f.id = id;
  f.track = track;
  f.args = args;
  f.nested_phase_ns = 0;
  // Read the clock last so the bookkeeping above is not timed.
  f.start_ns = trace_clock_ns();
  if (kind == kPhaseFrame && work_ != nullptr && in_step_) work_->on_phase(pending_.step, id);
  if (kind == kPhaseFrame && live_ != nullptr) {
    live_->phase.store(id, std::memory_order_relaxed);
    live_->changed_ns.store(f.start_ns, std::memory_order_relaxed);
  }
  return depth_++;
}

void StepTimer::close(int frame) {
  const int64_t end = trace_clock_ns();
  TS_CHECK(frame == depth_ - 1) << "scope " << frame << " closed while scope " << depth_ - 1
                                << " is still open: scopes must close in reverse order";
  const Frame& f = stack_[--depth_];
  const int64_t duration = end - f.start_ns;
  if (f.kind == kPhaseFrame) publish_phase(end);
  StepTimes& times = current();
  if (f.kind == kPhaseFrame) {
    if (--open_phase_count_[f.id] == 0) times.inclusive_seconds[f.id] += ns_to_s(duration);
    times.exclusive_seconds[f.id] += ns_to_s(duration - f.nested_phase_ns);
    ++times.scope_counts[f.id];
    for (int i = depth_ - 1; i >= 0; --i) {
      if (stack_[i].kind == kPhaseFrame) {
        stack_[i].nested_phase_ns += duration;
        break;
      }
    }
  } else if (--open_region_count_[f.id] == 0) {
    // Only a region created in the middle of this step can be beyond the size.
    if (static_cast<std::size_t>(f.id) >= times.region_seconds.size())
      times.region_seconds.resize(region_names_.size(), 0.0);
    times.region_seconds[f.id] += ns_to_s(duration);
  }
  if (recorder_ != nullptr && recorder_->enabled()) {
    const uint32_t name =
        f.kind == kPhaseFrame ? phase_trace_names_[f.id] : region_trace_names_[f.id];
    recorder_->record(name, f.track, f.start_ns, duration, in_step_ ? pending_.step : -1, f.args);
  }
}

int64_t StepTimer::steady_state_start() const {
  std::vector<double> wall;
  wall.reserve(steps_.size());
  for (const StepTimes& s : steps_) wall.push_back(s.wall_seconds);
  return profiler::steady_state_start(wall);
}

RunTimes StepTimer::run_times(int64_t warmup_steps) const {
  RunTimes run;
  const auto total = static_cast<int64_t>(steps_.size());
  run.warmup_steps = std::min(std::max(options_.warmup_steps, warmup_steps), total);
  run.measured_steps = total - run.warmup_steps;
  std::vector<double> wall, untracked;
  std::array<std::vector<double>, kNumPhases> inclusive, exclusive;
  std::vector<std::vector<double>> regions(region_names_.size());
  for (int64_t i = run.warmup_steps; i < total; ++i) {
    const StepTimes& s = steps_[i];
    wall.push_back(s.wall_seconds);
    untracked.push_back(s.untracked_seconds());
    for (int p = 0; p < kNumPhases; ++p) {
      inclusive[p].push_back(s.inclusive_seconds[p]);
      exclusive[p].push_back(s.exclusive_seconds[p]);
    }
    // A region that did not exist yet in a step spent no time in it.
    for (std::size_t r = 0; r < regions.size(); ++r)
      regions[r].push_back(r < s.region_seconds.size() ? s.region_seconds[r] : 0.0);
  }
  run.wall = summarize(wall);
  run.untracked = summarize(untracked);
  for (int p = 0; p < kNumPhases; ++p) {
    run.phases[p].inclusive = summarize(inclusive[p]);
    run.phases[p].exclusive = summarize(exclusive[p]);
  }
  for (std::size_t r = 0; r < regions.size(); ++r)
    run.regions.push_back(RegionTimes{region_names_[r], summarize(regions[r])});
  return run;
}

void StepTimer::clear() {
  steps_.clear();
  outside_ = StepTimes{};
}

nlohmann::json to_json(const Summary& s) {
  // NaN (empty summaries) becomes null in JSON.
  return {{"count", s.count}, {"mean", s.mean}, {"median", s.median}, {"stddev", s.stddev},
          {"cv", s.cv},       {"min", s.min},   {"max", s.max},       {"p50", s.p50},
          {"p95", s.p95},     {"p99", s.p99}};
}

nlohmann::json to_json(const StepTimes& step, const std::vector<std::string>& region_names) {
  nlohmann::json inclusive = nlohmann::json::object(), exclusive = nlohmann::json::object();
  for (int p = 0; p < kNumPhases; ++p) {
    inclusive[std::string(kPhaseNames[p])] = step.inclusive_seconds[p];
    exclusive[std::string(kPhaseNames[p])] = step.exclusive_seconds[p];
  }
  nlohmann::json regions = nlohmann::json::object();
  for (std::size_t r = 0; r < step.region_seconds.size() && r < region_names.size(); ++r)
    regions[region_names[r]] = step.region_seconds[r];
  return {{"step", step.step},
          {"wall_seconds", step.wall_seconds},
          {"untracked_seconds", step.untracked_seconds()},
          {"inclusive_seconds", std::move(inclusive)},
          {"exclusive_seconds", std::move(exclusive)},
          {"region_seconds", std::move(regions)}};
}

nlohmann::json to_json(const RunTimes& run) {
  nlohmann::json phases = nlohmann::json::object();
  for (int p = 0; p < kNumPhases; ++p) {
    phases[std::string(kPhaseNames[p])] = {{"inclusive", to_json(run.phases[p].inclusive)},
                                           {"exclusive", to_json(run.phases[p].exclusive)}};
  }
  nlohmann::json regions = nlohmann::json::object();
  for (const RegionTimes& r : run.regions) regions[r.name] = to_json(r.inclusive);
  return {{"warmup_steps", run.warmup_steps}, {"measured_steps", run.measured_steps},
          {"wall", to_json(run.wall)},        {"untracked", to_json(run.untracked)},
          {"phases", std::move(phases)},      {"regions", std::move(regions)}};
}

}  // namespace trainscope::profiler
