// Figures derived from one run's records: the one place each is computed, so
// that the runner's console row, the report's tables and charts and the
// regression check say the same thing. Definitions: docs/METRICS.md.
//
// A figure that could not be measured is NaN (doubles) or kUnknown (bytes).
//
// Thread-safety: pure functions.
#ifndef TRAINSCOPE_RESULTS_FIGURES_H_
#define TRAINSCOPE_RESULTS_FIGURES_H_

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "results/records.h"

namespace trainscope::results {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The machine load a run was measured under (docs/METRICS.md, "Machine
// load"): the busiest of its ranks' hosts as training started and as it ended.
struct RunLoad {
  double loadavg_1m_start = kNaN;  // highest over the ranks
  double loadavg_1m_end = kNaN;
  int64_t other_runnable_start = kUnknown;  // most on one host
  int64_t other_runnable_end = kUnknown;
  // Empty unless the run was measured on a loaded machine; then the first
  // host and moment where it was, e.g. "node0 at the end: 3 runnable threads
  // of other processes + 2 of the job's > 2 cores".
  std::string loaded;
};

struct RunFigures {
  double tokens_per_s = kNaN;    // the run's total (Totals::tokens_per_s)
  double step_median_s = kNaN;   // the slowest rank's median step
  double step_p95_s = kNaN;
  double step_mean_s = kNaN;     // mean over ranks of each rank's mean step
  PhaseTimes phase_mean_s;       // mean over ranks of each phase's mean per step
  double comm_share = kNaN;      // comm phase mean / step mean, 0..1
  // Gradient-sync time per step that backward did not hide: median over the
  // measured steps of each rank, mean over ranks.
  double comm_exposed_s = kNaN;
  // VmHWM summed over the ranks: a bound on the job's simultaneous peak.
  // kUnknown unless every rank of the world reported one.
  int64_t ranks_vm_hwm = kUnknown;
  RunLoad load;
  double avg_busbw_gbps = kNaN;  // all-reduce sweeps: mean over the rows
  int64_t wrong_elements = 0;    // all-reduce sweeps: failed verifications
};

// `summary` may be null (a run that wrote none, or a sweep).
RunFigures run_figures(const RunSummary* summary, std::span<const AllReduceRow> sweep_rows);

// A rank's measured steps: without the run's warm-up steps
// (options.warmup_steps), as the trainer's own statistics; all of them when
// the run has no more than its warm-up.
std::span<const StepRecord> measured_steps(const RunSummary& run,
                                           const std::vector<StepRecord>& steps);

// The busier of two loads, figure by figure; `loaded` of the first that has one.
RunLoad busier(const RunLoad& a, const RunLoad& b);

// busbw of each timed call of a sweep row (AllReduceRow::call_time_us), GB/s:
// the row's busbw scaled by its time over the call's. Empty for rows without
// per-call times.
std::vector<double> call_busbw_gbps(const AllReduceRow& row);

// Median of the values that are not NaN (NaN when none is); the convention
// of profiler/stats.h.
double median_of(std::vector<double> values);

}  // namespace trainscope::results

#endif  // TRAINSCOPE_RESULTS_FIGURES_H_
