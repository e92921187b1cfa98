#include "training/trainer.h"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>

#include "comm/watched_communicator.h"
#include "kernels/storage.h"
#include "profiler/stall_watchdog.h"
#include "training/run/export.h"
#include "training/run/report.h"
#include "training/run/run_context.h"
#include "training/run/setup.h"
#include "training/run/stall.h"
#include "training/run/step.h"
#include "training/run/training_state.h"

namespace trainscope::training {
namespace {

// One call of run_training(): the rooms of training/run/ in the order
// run_training() calls them (setup, the steps, the run report), each stage
// building what the next ones read. Every rank walks the same stages, so every
// rank issues the same collectives in the same order.
class TrainingRun {
 public:
  // `comm` reports its collectives to `watchdog`; both outlive the run.
  TrainingRun(const options::TrainOptions& options, comm::Communicator& comm,
              profiler::StallWatchdog& watchdog, std::FILE* out)
      : ctx_(options, comm, out),
        watchdog_(watchdog),
        state_(ctx_.rank, comm.host()),
        report_(ctx_, plan_, data_, state_, log_) {
    // This run's peaks, not those of whatever ran before it in the process.
    kernels::reset_peak_memory();
  }
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  void configure() { plan_ = configure_run(ctx_); }
  void load_data() { data_ = load_run_data(ctx_, plan_); }
  void build_model() { build_training_state(ctx_, plan_, data_, watchdog_, state_); }
  void print_header() const { print_run_header(ctx_, plan_, data_, state_); }
  // --export-run: instead of training.
  bool exports() const { return !ctx_.options.export_dir.empty(); }
  void export_for_peer() { export_run(ctx_, plan_, data_, state_); }
  // Up to --steps, or a non-finite loss (the summary then says so).
  void train() { log_ = train_steps(ctx_, plan_, data_, state_, summary_); }
  void gather_totals() { report_.gather_totals(summary_); }
  void write_outputs() { report_.write_outputs(summary_); }
  results::RunSummary take_summary() { return std::move(summary_); }

 private:
  RunContext ctx_;
  profiler::StallWatchdog& watchdog_;
  RunPlan plan_;         // configure()
  TrainingData data_;    // load_data()
  TrainingState state_;  // build_model(); the loop trains it
  StepLog log_;          // train()
  results::RunSummary summary_;
  RunReport report_;
};

}  // namespace

results::RunSummary run_training(const options::TrainOptions& options, comm::Communicator& comm,
                                 std::FILE* out) {
  profiler::StallWatchdog watchdog(
      watchdog_options(options, {.rank = comm.rank(), .world = comm.size(), .host = comm.host()}));
  return run_training(options, comm, watchdog, out);
}

results::RunSummary run_training(const options::TrainOptions& options, comm::Communicator& comm,
                                 profiler::StallWatchdog& watchdog, std::FILE* out) {
  comm::WatchedCommunicator watched(comm, watchdog);
  TrainingRun run(options, watched, watchdog, out);
  watchdog.set_stage("configure");
  run.configure();
  watchdog.set_stage("load_data");
  run.load_data();
  watchdog.set_stage("build_model");
  run.build_model();
  run.print_header();
  if (run.exports()) {
    watchdog.set_stage("export");
    run.export_for_peer();
    watchdog.set_stage("finished");
    return run.take_summary();
  }
  watchdog.set_stage("train");
  run.train();
  watchdog.set_stage("gather_totals");
  run.gather_totals();
  watchdog.set_stage("write_outputs");
  run.write_outputs();
  watchdog.set_stage("finished");
  return run.take_summary();
}

}  // namespace trainscope::training
