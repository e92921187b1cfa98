#include "profiler/stall_watchdog.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>

#include <fmt/format.h>

#include "base/check.h"
#include "profiler/trace.h"

namespace trainscope::profiler {
namespace {

// Wait scopes open on this thread: only the outermost records.
thread_local int t_open_waits = 0;

double seconds_between(int64_t from_ns, int64_t to_ns) {
  return static_cast<double>(to_ns - from_ns) * 1e-9;
}

// A tenth of the timeout, so that a stall is said at most 10% late; and no
// rarer than the status is due.
double poll_interval_s(const StallWatchdogOptions& o) {
  return std::clamp(std::min(o.timeout_s / 10, o.status_interval_s), 0.01, 0.5);
}

// A check this long after the one before (polls are at most 0.5 s apart)
// means the process did not run meanwhile: it was stopped, or the machine
// suspended. A loaded machine delaying a poll this long only delays a stall.
constexpr double kResumedAfterS = 1.0;

}  // namespace

std::string describe(const RankStatus& s) {
  std::string text = s.step >= 0 ? fmt::format("step {}", s.step) : "stage " + s.stage;
  if (!s.phase.empty()) text += ", phase " + s.phase;
  if (!s.collective.empty()) {
    text += fmt::format(", waiting {:.1f} s in {}", s.wait_s, s.collective);
    if (s.bucket >= 0) text += fmt::format(" (bucket {})", s.bucket);
  } else if (s.step >= 0) {
    text += fmt::format(" for {:.1f} s, in no collective", s.phase_s);
  } else {
    text += ", in no collective";
  }
  return text;
}

StallWatchdog::StallWatchdog(StallWatchdogOptions options)
    : options_(std::move(options)), stage_("start"), last_check_ns_(trace_clock_ns()) {
  TS_CHECK(options_.timeout_s > 0) << "stall timeout " << options_.timeout_s;
  thread_.emplace(poll_interval_s(options_), [this] {
    check();
    return true;
  });
}

StallWatchdog::~StallWatchdog() {
  thread_.reset();
  hand_over(status());
}

void StallWatchdog::set_stage(std::string_view stage) {
  std::lock_guard lock(mu_);
  stage_ = stage;
}

StallWatchdog::Wait StallWatchdog::wait(std::string_view collective, int32_t bucket) {
  if (t_open_waits++ > 0) return Wait(this, -1);
  const int64_t now = trace_clock_ns();
  std::lock_guard lock(mu_);
  for (int i = 0; i < kSlots; ++i) {
    Slot& slot = slots_[i];
    if (slot.busy) continue;
    slot.busy = true;
    slot.since_ns = now;
    slot.bucket = bucket;
    const std::size_t n = std::min(collective.size(), slot.collective.size() - 1);
    std::copy_n(collective.data(), n, slot.collective.data());
    slot.collective[n] = '\0';
    return Wait(this, i);
  }
  return Wait(this, -1);
}

void StallWatchdog::release(int slot) {
  const int64_t now = trace_clock_ns();
  std::lock_guard lock(mu_);
  slots_[slot].busy = false;
  last_wait_end_ns_ = now;
}

StallWatchdog::Wait::Wait(Wait&& other) noexcept
    : watchdog_(std::exchange(other.watchdog_, nullptr)), slot_(other.slot_) {}

StallWatchdog::Wait::~Wait() {
  if (watchdog_ == nullptr) return;
  --t_open_waits;
  if (slot_ >= 0) watchdog_->release(slot_);
}

RankStatus StallWatchdog::status() const {
  const int64_t now = trace_clock_ns();
  std::lock_guard lock(mu_);
  return status_locked(now);
}

int StallWatchdog::stalls() const {
  std::lock_guard lock(mu_);
  return stalls_;
}

RankStatus StallWatchdog::status_locked(int64_t now_ns, Stretch* stretch) const {
  RankStatus s;
  s.rank = options_.rank;
  s.host = options_.host;
  s.pid = ::getpid();
  s.stage = stage_;
  s.step = position_.step.load(std::memory_order_relaxed);
  const int64_t changed =
      std::max(position_.changed_ns.load(std::memory_order_relaxed), last_wait_end_ns_);
  if (s.step >= 0) {
    s.step_s = seconds_between(position_.step_start_ns.load(std::memory_order_relaxed), now_ns);
    s.phase_s = seconds_between(changed, now_ns);
  }
  const int32_t phase = position_.phase.load(std::memory_order_relaxed);
  if (phase >= 0 && phase < kNumPhases) s.phase = kPhaseNames[phase];
  const Slot* oldest = nullptr;
  for (const Slot& slot : slots_) {
    if (slot.busy && (oldest == nullptr || slot.since_ns < oldest->since_ns)) oldest = &slot;
  }
  if (oldest != nullptr) {
    s.collective = oldest->collective.data();
    s.bucket = oldest->bucket;
    s.wait_s = seconds_between(oldest->since_ns, now_ns);
  }
  // A rank in a collective is judged by its wait; one in none by how long it
  // has stayed in its phase (not by its step, which a long wait makes long).
  const int64_t since = oldest != nullptr ? oldest->since_ns : changed;
  const double judged_s = seconds_between(std::max(since, resumed_ns_), now_ns);
  s.stalled = (oldest != nullptr || s.step >= 0) && judged_s > options_.timeout_s;
  if (stretch != nullptr) *stretch = {since, judged_s};
  return s;
}

void StallWatchdog::check() {
  using Clock = std::chrono::steady_clock;
  std::unique_lock lock(mu_);
  const int64_t now = trace_clock_ns();
  if (seconds_between(last_check_ns_, now) > kResumedAfterS) resumed_ns_ = now;
  last_check_ns_ = now;
  Stretch stretch;
  const RankStatus s = status_locked(now, &stretch);
  const bool began = s.stalled && stretch.since_ns > last_seen_stalled_ns_;
  if (s.stalled) last_seen_stalled_ns_ = now;
  if (began) ++stalls_;
  lock.unlock();
  if (began) {
    std::fprintf(options_.out,
                 "trainscope: rank %d (%s): no progress for over %g s (--stall-timeout): %s\n",
                 s.rank, s.host.c_str(), options_.timeout_s, describe(s).c_str());
    std::fflush(options_.out);
  }
  if (options_.abort_after_s > 0 && s.stalled && stretch.judged_s > options_.abort_after_s) {
    abort_job(s, stretch.judged_s);
  }
  if (began || Clock::now() >= next_status_) {
    hand_over(s);
    next_status_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(options_.status_interval_s));
  }
}

void StallWatchdog::abort_job(const RankStatus& s, double stalled_s) {
  std::string where;
  if (s.collective.empty()) {
    where = fmt::format("{}: the others wait for this rank", describe(s));
  } else {
    where = fmt::format("waits in {}{} at {}", s.collective,
                        s.bucket >= 0 ? fmt::format(" (bucket {})", s.bucket) : std::string(),
                        s.step >= 0 ? fmt::format("step {}", s.step) : "stage " + s.stage);
    std::string missing = "unknown";
    if (options_.not_arrived) {
      try {
        missing = options_.not_arrived(s);
      } catch (const std::exception& e) {
        missing = fmt::format("unknown ({})", e.what());
      }
    }
    where += "; not arrived: " + missing;
  }
  std::fprintf(options_.out,
               "trainscope: rank %d (%s): stalled for %.1f s: %s; ending the job "
               "(--stall-action abort, exit %d)\n",
               s.rank, s.host.c_str(), stalled_s, where.c_str(), kExitStalled);
  std::fflush(options_.out);
  hand_over(s);
  std::fflush(nullptr);
  std::_Exit(kExitStalled);
}

void StallWatchdog::hand_over(const RankStatus& status) {
  if (!options_.on_status) return;
  try {
    options_.on_status(status);
  } catch (const std::exception& e) {
    if (std::exchange(status_failed_, true)) return;
    std::fprintf(options_.out, "trainscope: rank %d: cannot keep its status: %s\n", status.rank,
                 e.what());
    std::fflush(options_.out);
  }
}

}  // namespace trainscope::profiler
