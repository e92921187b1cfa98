// The phases of a training step, in the order summaries, the results
// database and reports list them: the vocabulary the step timer
// (profiler/step_timer.h) times and the work counter (profiler/work_counter.h)
// counts, apart from both so that neither includes the other.
//
// Thread-safety: constants.
#ifndef TRAINSCOPE_PROFILER_PHASES_H_
#define TRAINSCOPE_PROFILER_PHASES_H_

#include <array>
#include <string_view>

namespace trainscope::profiler {

enum class Phase : int {
  kData = 0,
  kForward,
  kBackward,
  kComm,  // inside or waiting on collectives
  kOptimizer,
  kEval,
  kCheckpoint,
};
inline constexpr int kNumPhases = 7;

// The phases' names in Phase order: how summaries, the results database and
// reports call them.
inline constexpr std::array<std::string_view, kNumPhases> kPhaseNames = {
    "data", "forward", "backward", "comm", "optimizer", "eval", "checkpoint"};

inline constexpr std::string_view phase_name(Phase phase) {
  return kPhaseNames[static_cast<int>(phase)];
}

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_PHASES_H_
