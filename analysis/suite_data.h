// A suite read back from the results database, grouped the way reports and
// regression checks look at it: one CaseData per case name, holding every
// repetition of that case (RunData) with its summary, poller samples and
// all-reduce rows.
//
// load_suite() reads everything a report needs in one pass, so the renderers
// never touch SQLite; case_figures() reduces a case's repetitions to the
// figures every table prints (medians over repetitions, means over ranks).
//
// Selectors: "latest" (the most recent suite), "all" (every suite, latest
// first; resolve_suites only) or a numeric suite id. An unknown id, a bad
// selector or a database without suites throws trainscope::Error naming the
// database and the selector.
//
// Thread-safety: plain values; the loaders use the ResultsDb they are given
// (one thread at a time, as ResultsDb requires).
#ifndef TRAINSCOPE_ANALYSIS_SUITE_DATA_H_
#define TRAINSCOPE_ANALYSIS_SUITE_DATA_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "results/figures.h"
#include "results/records.h"
#include "results/results_db.h"

namespace trainscope::analysis {

// One repetition of one case.
struct RunData {
  results::RunRow row;
  std::optional<results::RunSummary> summary;  // none: the run died before writing one
  std::vector<profiler::ProcessSample> poller;
  std::vector<results::AllReduceRow> allreduce;
  // Counts as measured: status ok and a summary to measure from.
  bool usable() const { return row.status == results::RunStatus::kOk && summary.has_value(); }
};

// Every repetition of one case, in the order the runner started them.
struct CaseData {
  std::string name;
  results::RunCase run_case;  // of the first repetition
  std::vector<RunData> runs;
  std::vector<const RunData*> usable_runs() const;
  // The first of them; nullptr when none is usable.
  const RunData* first_usable() const {
    const auto runs = usable_runs();
    return runs.empty() ? nullptr : runs.front();
  }
};

// Whether two cases were configured alike (their recorded configurations,
// RunCase::config) but for the keys `ignored`, their names and skip reasons.
bool alike_but(const CaseData& a, const CaseData& b, std::initializer_list<const char*> ignored);

struct SuiteData {
  std::string db_path;
  results::SuiteRow suite;
  std::vector<CaseData> cases;  // in order of each case's first run
  // The machine's measured limits (results/machine_limits.h): the suite's
  // own; without any (--no-limits, or older results), the latest that
  // `trainscope doctor --db` stored for the suite's host; else none.
  std::vector<results::MachineLimit> limits;
  // A simulator's step times for this suite's step (`trainscope simgrid
  // --save`; results/simulation_records.h); none when not simulated.
  std::vector<results::SimulatedStep> simulations;
  const CaseData* find_case(std::string_view name) const;
};

// Resolves a selector ("latest" or an id) to one suite id.
int64_t resolve_suite(results::ResultsDb& db, std::string_view selector);
// Like resolve_suite, and "all" gives every suite (latest first).
std::vector<int64_t> resolve_suites(results::ResultsDb& db, std::string_view selector);

SuiteData load_suite(results::ResultsDb& db, int64_t suite_id);

// Figures of one case: each run's results::RunFigures, reduced over its
// usable repetitions (medians). NaN where nothing was measured.
struct CaseFigures {
  int repetitions = 0;  // runs of the case
  int usable = 0;       // of which ok with a summary
  int world_size = 1;
  std::string status;        // "ok", "failed", "skipped", "running", "partial"
  std::string reason;        // why not ok (first failed/skipped run's error)
  double tokens_per_s = 0;   // median over repetitions of the run total
  double step_median_s = 0;  // median over repetitions
  double step_p95_s = 0;     // median over repetitions
  double step_mean_s = 0;    // mean over ranks, median over repetitions
  // Mean time per step of each phase (mean over ranks, median over
  // repetitions), in the order of kPhaseNames.
  std::vector<double> phase_mean_s;
  double comm_share = 0;  // comm phase mean / step mean
  // Gradient-sync time per step that backward did not hide: the training
  // thread's time in the reduction (median over measured steps, mean over
  // ranks, median over repetitions). Comparable across strategies: what
  // overlap buys shows here.
  double comm_exposed_s = 0;
  // Machine load (docs/METRICS.md): the busiest over the usable repetitions,
  // and how many of them were measured on a loaded machine (`load.loaded`
  // says where and why for the first).
  results::RunLoad load;
  int loaded = 0;
  // Each rank's compute, wait and all-reduce time per step (medians over the
  // repetitions), flagged as stragglers from those medians (results/figures.h).
  std::vector<results::RankTimes> rank_times;
  double straggler_s = 0;  // the straggler figure, median over repetitions
  // A rank's model GFLOP/s and the gradient sync's busbw GB/s
  // (results/figures.h), medians over repetitions.
  double rank_gflops = 0;
  double grad_busbw_gbps = 0;
  double host_cpu_busy = NAN;  // results::RunFigures::host_cpu_busy, median
};

CaseFigures case_figures(const CaseData& c);

// results::RunFigures of each usable repetition, in run order: the figures
// an interval over the repetitions is made from.
std::vector<results::RunFigures> repetition_figures(const CaseData& c);

// Each memory category's tracked peak on the rank that held the most of it.
results::MemoryByCategory peak_by_category(const results::RunSummary& s);

// Memory totals of a case across its ranks (first usable repetition), bytes;
// -1 when unknown.
struct MemoryTotals {
  int64_t tracked_peak = -1;
  int64_t vm_hwm = -1;
  int64_t pss_peak = -1;   // sum over ranks of each rank's peak PSS
  std::string pss_source;  // "poller" or "ranks"
};
MemoryTotals memory_totals(const CaseData& c);

// The btl_tcp_links count of a RunCase::links text, as the runner stores it:
// "2" -> 2; a transport name ("shm", "auto": not a TCP case) -> 0.
int tcp_links(const std::string& links);

}  // namespace trainscope::analysis

#endif  // TRAINSCOPE_ANALYSIS_SUITE_DATA_H_
