// Counting a step's compute work under valgrind's callgrind, phase by phase:
// the deterministic work lane of the speed gate (suites/work_lane.h).
//
// Step times on a shared CI machine are noisy; instruction counts are not:
// the same binary, inputs and environment execute the same instructions
// whatever else the machine does. But a whole process's count is not only
// its work: MPI busy-polls while it waits, which depends on the other rank's
// timing. So the count is restricted to the compute phases: callgrind's
// collection is on exactly while the innermost open StepTimer phase is data,
// forward, backward or optimizer (a comm phase nested in backward pauses it;
// eval and checkpoint are not counted), and each compute phase's cost is
// dumped under the name "trainscope rank R step S phase P" when another compute
// phase begins or the step ends. Callgrind's collection state is per
// thread, so overlap's communication thread and the watchdog's are never
// counted.
//
// Active only when the process runs under valgrind AND TRAINSCOPE_COUNT_WORK
// is 1 (set by the work lane, which starts callgrind with
// --instr-atstart=no --collect-atstart=no: the set-up runs uninstrumented,
// and the first phase of the first step starts the instrumentation): a
// callgrind run of someone else's keeps its own collection. Otherwise make_work_counter() returns null and the step timer
// does nothing more. Outside valgrind the client requests are a few no-op
// instructions.
//
// Thread-safety: called by the StepTimer's thread only.
#ifndef TRAINSCOPE_PROFILER_WORK_COUNTER_H_
#define TRAINSCOPE_PROFILER_WORK_COUNTER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace trainscope::profiler {

inline constexpr const char* kCountWorkVariable = "TRAINSCOPE_COUNT_WORK";
// What a dump's name starts with; the rest is "R step S phase P".
inline constexpr std::string_view kWorkDumpPrefix = "trainscope rank ";

class WorkCounter {
 public:
  // Told "collect on", "collect off" and "dump NAME" as they are asked of
  // callgrind (tests watch the sequence; outside valgrind it is invisible).
  using Observer = std::function<void(std::string_view)>;
  explicit WorkCounter(int rank, Observer observer = {})
      : rank_(rank), observer_(std::move(observer)) {}
  // The innermost open phase changed to `phase` (a Phase, or -1 for none)
  // inside step `step`.
  void on_phase(int64_t step, int phase);
  // Step `step` ended: what it collected is dumped.
  void on_step_end(int64_t step);

 private:
  void toggle_collect(bool on);
  void stop_collecting();
  void dump(int64_t step, int phase);

  int rank_;
  Observer observer_;
  bool instrumenting_ = false;  // callgrind runs --instr-atstart=no until the first phase
  int collecting_ = -1;         // the phase being collected now, -1 none
  int pending_ = -1;     // the phase whose collected cost awaits its dump
};

// A WorkCounter for rank `rank` when this process should count its work
// (above), else null.
std::unique_ptr<WorkCounter> make_work_counter(int rank);

// "trainscope rank 1 step 3 phase forward": a dump's name; and back. Returns
// false for a dump that is not one of ours.
std::string work_dump_name(int rank, int64_t step, int phase);
struct WorkDumpName {
  int rank = 0;
  int64_t step = 0;
  std::string phase;
};
bool parse_work_dump_name(std::string_view name, WorkDumpName* out);

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_WORK_COUNTER_H_
