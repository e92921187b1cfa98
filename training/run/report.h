// The end of a run. Every rank sends every rank its report (its results and
// steps, a hash of its parameters, its transport settings and its trace);
// every rank then checks that all ranks hold rank 0's parameters (data
// parallelism's promise) and fills in the summary. Rank 0 then writes the
// merged trace, prints the final tables (summary line, memory, phases,
// stragglers) and writes the summary file.
#ifndef TRAINSCOPE_TRAINING_RUN_REPORT_H_
#define TRAINSCOPE_TRAINING_RUN_REPORT_H_

#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/step_timer.h"
#include "results/records.h"
#include "training/run/run_context.h"
#include "training/run/step.h"
#include "training/run/training_state.h"

namespace trainscope::training {

class RunReport {
 public:
  // Every argument must outlive this; it reads them when its methods run.
  RunReport(const RunContext& ctx, const RunPlan& plan, const TrainingData& data,
            TrainingState& state, const StepLog& log);
  RunReport(const RunReport&) = delete;
  RunReport& operator=(const RunReport&) = delete;

  // Every rank (one all-gather). Fills in everything in `summary` but what the
  // loop put there (a failure, the validation losses). Throws
  // trainscope::Error (kExitFailure) when a rank's parameters differ from
  // rank 0's.
  void gather_totals(results::RunSummary& summary);
  // After gather_totals(). Every rank ends its trace stream (its last
  // flush); rank 0 then writes the merged --trace, prints the final tables
  // (unless --quiet, or no step ran) and writes the --summary file.
  void write_outputs(const results::RunSummary& summary);

 private:
  nlohmann::json rank_report();
  results::RankResult rank_result() const;
  void check_parameters_agree() const;
  void describe_run(results::RunSummary& summary) const;
  void add_rank_results(results::RunSummary& summary) const;
  void add_transports(results::RunSummary& summary) const;
  void add_totals(results::RunSummary& summary) const;
  void write_trace() const;
  void print_report(const results::RunSummary& summary) const;

  const RunContext& ctx_;
  const RunPlan& plan_;
  const TrainingData& data_;
  TrainingState& state_;
  const StepLog& log_;
  profiler::RunTimes run_times_;          // this rank's, over the measured steps
  std::vector<nlohmann::json> per_rank_;  // every rank's rank_report(), by rank
};

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_RUN_REPORT_H_
