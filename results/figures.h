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

// A rank is a straggler when its compute per step is more than this share
// above the median of the ranks' compute, and by more than kStragglerMinExcessS:
// on sub-millisecond steps 10% is scheduler noise, not a rank to look at.
inline constexpr double kStragglerThreshold = 0.10;
inline constexpr double kStragglerMinExcessS = 1e-3;

// One rank's step split into computing and waiting: medians over its
// measured steps.
struct RankTimes {
  int rank = 0;
  double compute_s = kNaN;    // step_compute_s
  double wait_s = kNaN;       // phases.comm: the training thread in collectives
  double comm_time_s = kNaN;  // gradient all-reduces in flight (overlap: its thread)
  // wait_s split in two, step by step: the least wait of any rank in that
  // step is transfer (the last rank to arrive waits for nothing else), the
  // rest of this rank's is waiting for slower ranks to arrive.
  double waiting_for_others_s = kNaN;
  double transfer_s = kNaN;
  double optimizer_s = kNaN;  // phases.optimizer, part of compute_s
  // compute_s / the median over ranks of compute_s, minus 1: 0.38 is 38% above.
  double compute_vs_median = kNaN;
  bool straggler = false;  // beyond both straggler limits
};

struct RunFigures {
  double tokens_per_s = kNaN;   // the run's total (Totals::tokens_per_s)
  double step_median_s = kNaN;  // the slowest rank's median step
  double step_p95_s = kNaN;
  double step_mean_s = kNaN;  // mean over ranks of each rank's mean step
  PhaseTimes phase_mean_s;    // mean over ranks of each phase's mean per step
  double comm_share = kNaN;   // comm phase mean / step mean, 0..1
  // Gradient-sync time per step that backward did not hide: median over the
  // measured steps of each rank, mean over ranks.
  double comm_exposed_s = kNaN;
  // VmHWM summed over the ranks: a bound on the job's simultaneous peak.
  // kUnknown unless every rank of the world reported one.
  int64_t ranks_vm_hwm = kUnknown;
  RunLoad load;
  // Model FLOP/s of one rank, GFLOP/s: the summary's flops_per_step over
  // the world size and the step median. NaN in summaries without FLOPs.
  double rank_gflops = kNaN;
  // Bus bandwidth of the gradient sync, GB/s: rank 0's median over its
  // measured steps of bus bytes / comm_time_s (nccl-tests' busbw). An
  // all-reduce's bus bytes are 2(n-1)/n of its message; ZeRO's reduce-scatter
  // and all-gather, whose messages comm_bytes counts twice, (n-1)/n each.
  // NaN for one rank or steps without all-reduce time.
  double grad_busbw_gbps = kNaN;
  double avg_busbw_gbps = kNaN;       // all-reduce sweeps: mean over the rows
  int64_t wrong_elements = 0;         // all-reduce sweeps: failed verifications
  std::vector<RankTimes> rank_times;  // by rank, those that recorded steps
  // Median over the measured steps of straggler_per_step: rank-seconds per
  // step the ranks computed beyond the fastest one.
  double straggler_s = kNaN;
  // The busiest machine's share of its CPUs (0..1, above 1 only by rounding)
  // kept busy over the steps: by the ranks there (RankResult::cpu_s) or,
  // where higher, by everything (/proc/stat between the ranks' load
  // readings: the kernel's network work too). Near 1 for a replay, whose
  // ranks sleep their compute, the communication itself was short of CPU:
  // its links could not run at their rate.
  double host_cpu_busy = kNaN;
};

// The training thread's time in a step outside collectives: step_time_s
// minus phases.comm. Data, forward, backward and optimizer (and eval and
// checkpoint steps' own work) count; an injected delay counts.
double step_compute_s(const StepRecord& step);

// For every measured step that each rank recorded: the sum over ranks of
// (the rank's step_compute_s - the least of that step). 0 when the ranks
// compute equally; with one slow rank, how much longer it took.
std::vector<double> straggler_per_step(const RunSummary& run);

// Sets compute_vs_median and straggler of each rank from their compute_s.
void flag_stragglers(std::vector<RankTimes>& ranks);

// "rank 1 computes 38% above the median".
std::string straggler_note(const RankTimes& rank);

// `summary` may be null (a run that wrote none, or a sweep).
RunFigures run_figures(const RunSummary* summary, std::span<const AllReduceRow> sweep_rows);

// A rank's measured steps: without the run's warm-up steps (warmup_steps,
// or options.warmup_steps in older summaries), as the trainer's own
// statistics; all of them when
// the run has no more than its warm-up.
std::span<const StepRecord> measured_steps(const RunSummary& run,
                                           const std::vector<StepRecord>& steps);

// Median of one integer figure of rank 0's measured steps (comm_bytes,
// comm_calls...); NaN for a run without steps.
double median_step_figure(const RunSummary& run, int64_t StepRecord::*figure);

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
