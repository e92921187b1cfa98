// Per-step phase timing for the training loop.
//
// A StepTimer measures, for every training step, how many seconds went to each
// fixed phase (data, forward, backward, comm, optimizer, eval, checkpoint) and
// to free-form named regions, using scoped (RAII) timers on steady_clock:
//
//   StepTimer timer({.warmup_steps = 2});
//   timer.begin_step(step);
//   { auto s = timer.phase(Phase::kForward); model.forward(...); }
//   { auto s = timer.phase(Phase::kBackward);
//     ...  { auto c = timer.phase(Phase::kComm, {.bytes = n, .bucket = b}); wait(); } }
//   timer.end_step();
//   RunTimes run = timer.run_times();   // statistics without the warm-up steps
//
// Nesting and accounting. Scopes nest (LIFO); each phase gets two figures:
//  * inclusive: wall time while at least one scope of that phase was open
//    (a phase nested in itself is not counted twice);
//  * exclusive: inclusive minus the time of phase scopes nested inside it,
//    i.e. time during which it was the innermost open phase.
// So with comm overlapped inside backward, backward.inclusive covers the whole
// backward pass, backward.exclusive is backward compute only and
// comm.exclusive == comm.inclusive is the time inside or waiting on
// collectives. Exclusive times never overlap, so their sum is at most the
// step's wall time; the rest is `untracked` (time in no phase). Free-form
// regions are annotations: they have inclusive time only and never take time
// away from a phase.
//
// Steps. begin_step()/end_step() bracket a record; its wall time is the time
// between them. Scopes closed while no step is open (e.g. a final checkpoint)
// are not in any step record; they add up in outside_steps(). Statistics skip
// the first `warmup_steps` recorded steps.
//
// Cost. A scope is two steady_clock reads and a push/pop on a fixed-depth
// stack: no allocation; bench/profiler_bench.cpp measures it. With a
// TraceRecorder attached and enabled, each closed scope also becomes a trace
// event (comm on the comm track, everything else on compute). With a
// LivePosition attached, each step and phase change is also published there
// (a relaxed atomic store), for a watchdog on another thread. With a
// WorkCounter attached (the work lane, profiler/work_counter.h), each change
// of the innermost phase inside a step and each step's end is told to it.
//
// Thread-safety: none, except LivePosition. A StepTimer belongs to the thread
// running the training loop; scopes must close on that thread in reverse
// order of opening.
#ifndef TRAINSCOPE_PROFILER_STEP_TIMER_H_
#define TRAINSCOPE_PROFILER_STEP_TIMER_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "profiler/phases.h"
#include "profiler/stats.h"
#include "profiler/trace.h"
#include "profiler/work_counter.h"

namespace trainscope::profiler {

using RegionId = int32_t;

struct StepTimes {
  int64_t step = 0;
  double wall_seconds = 0;
  std::array<double, kNumPhases> inclusive_seconds{};
  std::array<double, kNumPhases> exclusive_seconds{};
  std::array<int32_t, kNumPhases> scope_counts{};
  // Indexed by RegionId; regions created after this step are absent.
  std::vector<double> region_seconds;

  double seconds(Phase p) const { return inclusive_seconds[static_cast<int>(p)]; }
  double exclusive(Phase p) const { return exclusive_seconds[static_cast<int>(p)]; }
  // wall_seconds minus the sum of exclusive phase times.
  double untracked_seconds() const;
};

struct PhaseTimes {
  Summary inclusive;
  Summary exclusive;
};

struct RegionTimes {
  std::string name;
  Summary inclusive;
};

// Run statistics over the measured (non-warm-up) steps.
struct RunTimes {
  int64_t warmup_steps = 0;
  int64_t measured_steps = 0;
  Summary wall;
  Summary untracked;
  std::array<PhaseTimes, kNumPhases> phases;
  std::vector<RegionTimes> regions;

  const PhaseTimes& operator[](Phase p) const { return phases[static_cast<int>(p)]; }
};

nlohmann::json to_json(const Summary& summary);
nlohmann::json to_json(const StepTimes& step, const std::vector<std::string>& region_names);
nlohmann::json to_json(const RunTimes& run);

// Where a StepTimer's thread is, for other threads to read (relaxed atomics,
// so a reader may see the step of one instant and the phase of the next).
struct LivePosition {
  std::atomic<int64_t> step{-1};          // the open step; -1 between steps
  std::atomic<int64_t> step_start_ns{0};  // trace_clock_ns() at its begin_step()
  std::atomic<int32_t> phase{-1};         // the innermost open Phase; -1 none
  std::atomic<int64_t> changed_ns{0};     // when a step or phase last began or ended
};

struct StepTimerOptions {
  int64_t warmup_steps = 0;  // first N recorded steps left out of run_times()
  int max_depth = 32;        // deepest scope nesting allowed
};

class StepTimer {
 public:
  class Scope;

  explicit StepTimer(StepTimerOptions options = {});
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

  // Attach (or with nullptr detach) a recorder; closed scopes become events
  // while it is enabled. The recorder must outlive the attachment.
  void set_trace_recorder(TraceRecorder* recorder);

  // Publish steps and phases to `position` from now on (nullptr: stop).
  // `position` must outlive the attachment.
  void set_live_position(LivePosition* position);

  // Tell `counter` of phase changes inside steps from now on (nullptr:
  // stop). It must outlive the attachment.
  void set_work_counter(WorkCounter* counter) { work_ = counter; }

  // Id of a named region, created on first use (allocates: call at setup).
  RegionId region_id(std::string_view name);
  const std::vector<std::string>& region_names() const { return region_names_; }

  void begin_step(int64_t step);
  void end_step();
  bool in_step() const { return in_step_; }

  [[nodiscard]] Scope phase(Phase phase, TraceArgs args = {});
  [[nodiscard]] Scope region(RegionId id, Track track = Track::kCompute, TraceArgs args = {});

  const std::vector<StepTimes>& steps() const { return steps_; }
  const StepTimes& outside_steps() const { return outside_; }
  // Statistics over the steps after the warm-up: the first
  // max(options.warmup_steps, warmup_steps) recorded steps are left out.
  RunTimes run_times(int64_t warmup_steps = 0) const;
  // Where the recorded steps' wall times become steady (steady_state.h).
  int64_t steady_state_start() const;
  void clear();  // drops step records, keeps regions and options

  // Scope internals, public for Scope only.
  int open(int kind, int32_t id, Track track, TraceArgs args);
  void close(int frame);

 private:
  struct Frame {
    int kind;  // 0 phase, 1 region
    int32_t id;
    Track track;
    TraceArgs args;
    int64_t start_ns;
    int64_t nested_phase_ns;  // time of phase scopes directly inside this one
  };

  StepTimes& current() { return in_step_ ? pending_ : outside_; }
  // The innermost open phase, -1 for none.
  int32_t innermost_phase() const;
  // The innermost open phase, changed at `now_ns`, to live_ and work_.
  void publish_phase(int64_t now_ns) const;

  StepTimerOptions options_;
  std::vector<Frame> stack_;  // capacity max_depth, reserved once
  int depth_ = 0;
  std::array<int, kNumPhases> open_phase_count_{};
  std::vector<int> open_region_count_;
  std::vector<std::string> region_names_;
  TraceRecorder* recorder_ = nullptr;
  std::array<uint32_t, kNumPhases> phase_trace_names_{};
  std::vector<uint32_t> region_trace_names_;
  LivePosition* live_ = nullptr;
  WorkCounter* work_ = nullptr;

  bool in_step_ = false;
  int64_t step_start_ns_ = 0;
  StepTimes pending_;
  StepTimes outside_;
  std::vector<StepTimes> steps_;
};

// Closes its scope on destruction. Move-only; a moved-from Scope does nothing.
class StepTimer::Scope {
 public:
  Scope(StepTimer* timer, int frame) : timer_(timer), frame_(frame) {}
  Scope(Scope&& other) noexcept : timer_(other.timer_), frame_(other.frame_) {
    other.timer_ = nullptr;
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  Scope& operator=(Scope&&) = delete;
  ~Scope() { stop(); }
  // Close before the end of the enclosing block.
  void stop() {
    if (timer_ != nullptr) timer_->close(frame_);
    timer_ = nullptr;
  }

 private:
  StepTimer* timer_;
  int frame_;
};

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_STEP_TIMER_H_
