// A per-rank watchdog for collectives that do not complete: Horovod's stall
// check, without a coordinator. When one rank hangs or crawls, the others
// wait in a collective for it; each rank's watchdog then says, once, where it
// is, so that the job's stderr tells who is missing where instead of only
// timing out.
//
// The training code marks each wait in a collective with a Wait scope
// (comm/watched_communicator.h does it for every Communicator call; the
// gradient reductions label theirs with the strategy and the bucket), and a
// StepTimer attached to live_position() publishes the step and phase. A thread
// wakes several times per timeout and judges:
//  * a rank waiting in a collective is stalled when its longest open wait has
//    lasted more than the timeout (overlap: the communication thread's wait
//    in a bucket's all-reduce is usually the longest);
//  * a rank in a step but in no collective is stalled when it has stayed in
//    one phase (no phase begun or ended, no wait ended) for more than the
//    timeout: it is the one the others are waiting for.
// Time this process did not run (stopped with SIGSTOP, as a debugger or a
// test does, then continued; mpirun continues a stopped rank to end it) is
// not judged: a check that comes long after the one before judges what it
// finds from then on, so a continued rank does not report the others' stall
// as its own.
// For each stall (each wait, or each stretch in one phase) it prints one line
// (describe() of its status) to `out`, once; with abort_after_s, a stall that
// lasts that long ends the process (exit kExitStalled), naming the ranks
// that have not arrived, so that a hung job ends instead of waiting forever. About every
// status_interval_s, and at once when it stalls, it hands the rank's status
// to on_status (the trainer keeps a file of it that the suite runner reads
// when a job hangs or dies).
//
// Thread-safety: wait(), set_stage() and status() may be called from any
// thread; on_status runs on the watchdog's thread. Wait scopes nest per
// thread: inside an open one, further wait() calls on that thread return
// scopes that record nothing, so the outer (labelled) wait is what is shown.
#ifndef TRAINSCOPE_PROFILER_STALL_WATCHDOG_H_
#define TRAINSCOPE_PROFILER_STALL_WATCHDOG_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "profiler/periodic_thread.h"
#include "profiler/step_timer.h"

namespace trainscope::profiler {

// Where one rank was at one instant.
struct RankStatus {
  int rank = 0;
  std::string host;
  int64_t pid = 0;
  std::string stage;       // the trainer's stage: "configure", "load_data", ..., "train"
  int64_t step = -1;       // -1: not in a step
  std::string phase;       // innermost open phase (kPhaseNames); empty: none
  std::string collective;  // the longest open wait; empty: none
  int32_t bucket = -1;     // of that wait; -1: none
  double wait_s = 0;       // how long that wait has lasted
  double step_s = 0;       // how long the current step has run
  double phase_s = 0;      // in a step: since a phase last began or ended, or a wait ended
  bool stalled = false;    // a wait, or a phase in no collective, beyond the timeout
  bool operator==(const RankStatus&) const = default;
};

// "step 3, phase comm, waiting 6.1 s in all_reduce fused (bucket 0)",
// "step 3, phase forward for 6.1 s, in no collective",
// "stage load_data, waiting 2.0 s in all_gather".
std::string describe(const RankStatus& status);

struct StallWatchdogOptions {
  int rank = 0;
  std::string host;
  double timeout_s = 60;           // > 0
  std::FILE* out = stderr;         // where the stall line goes
  double status_interval_s = 1.0;  // how often on_status runs
  // Must not block for long: the stall check waits for it. Errors it throws
  // are printed once and otherwise ignored.
  std::function<void(const RankStatus&)> on_status;
  // > 0: a stall that lasts this long (the timeout and a grace period) ends
  // the process with kExitStalled after one line saying where it waits and,
  // from `not_arrived` (the ranks it is waiting for, as far as it can see),
  // who is missing; mpirun then ends the job. 0: never.
  double abort_after_s = 0;
  std::function<std::string(const RankStatus&)> not_arrived;
};

class StallWatchdog {
 public:
  class Wait;

  // Starts the thread.
  explicit StallWatchdog(StallWatchdogOptions options);
  // Stops the thread, then hands on_status the last status.
  ~StallWatchdog();
  StallWatchdog(const StallWatchdog&) = delete;
  StallWatchdog& operator=(const StallWatchdog&) = delete;

  // For StepTimer::set_live_position(); lives as long as the watchdog.
  LivePosition& live_position() { return position_; }
  // What the program is doing outside the steps ("load_data"...).
  void set_stage(std::string_view stage);

  // The calling thread waits in `collective` (a bucket's all-reduce, a
  // barrier...) until the scope closes. Names are cut to 39 bytes.
  [[nodiscard]] Wait wait(std::string_view collective, int32_t bucket = -1);

  RankStatus status() const;
  int stalls() const;  // stall lines printed so far

 private:
  struct Slot {
    bool busy = false;
    int64_t since_ns = 0;
    std::array<char, 40> collective{};
    int32_t bucket = -1;
  };
  static constexpr int kSlots = 4;  // the training thread, overlap's comm thread, spares

  // What a status is judged by: the oldest wait, or the phase in no
  // collective; since when, and for how long as far as this process saw it
  // (not before it was last resumed).
  struct Stretch {
    int64_t since_ns = 0;
    double judged_s = 0;
  };
  RankStatus status_locked(int64_t now_ns, Stretch* stretch = nullptr) const;
  void release(int slot);
  void check();  // every poll, on the periodic thread
  void hand_over(const RankStatus& status);
  [[noreturn]] void abort_job(const RankStatus& status, double stalled_s);

  const StallWatchdogOptions options_;
  LivePosition position_;
  mutable std::mutex mu_;
  std::array<Slot, kSlots> slots_;
  std::string stage_;
  int64_t last_wait_end_ns_ = 0;
  // When the last check found the rank stalled: what began before then is
  // that stall still (overlap's final wait behind its thread's), what began
  // after is another.
  int64_t last_seen_stalled_ns_ = INT64_MIN;
  int stalls_ = 0;
  // The last check, and the first one that came over kResumedAfterS after
  // the one before it: the process had not run (trace clock).
  int64_t last_check_ns_;
  int64_t resumed_ns_ = INT64_MIN;
  // The periodic thread's own.
  std::chrono::steady_clock::time_point next_status_ = std::chrono::steady_clock::now();
  bool status_failed_ = false;            // on_status threw once: said, not repeated
  std::optional<PeriodicThread> thread_;  // last: starts after everything it reads exists
};

// Closes its wait on destruction. Move-only; a default-constructed or
// moved-from Wait does nothing.
class StallWatchdog::Wait {
 public:
  Wait() = default;
  Wait(Wait&& other) noexcept;
  Wait(const Wait&) = delete;
  Wait& operator=(const Wait&) = delete;
  Wait& operator=(Wait&&) = delete;
  ~Wait();

 private:
  friend class StallWatchdog;
  Wait(StallWatchdog* watchdog, int slot) : watchdog_(watchdog), slot_(slot) {}
  StallWatchdog* watchdog_ = nullptr;
  int slot_ = -1;  // -1: nested or no free slot; records nothing
};

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_STALL_WATCHDOG_H_
