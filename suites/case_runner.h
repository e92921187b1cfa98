// One repetition of one suite case, run and recorded: the unit of work the
// suite runner (suites/runner.h) and the paired comparison of two builds
// (suites/paired_runner.h) share.
//
// plan_suite checks everything that can be wrong with the input before
// anything is written (the hostfile, mpirun, the filter). A CaseRunner then
// runs cases one at a time: where each runs (suites/case_hosts.h), its
// command (suites/launch_plan.h) with the trainscope binary it is given, the
// job under supervision (suites/case_job.h), and its row in the results
// database: begun before the job starts, finished with its summary in one
// transaction, or marked skipped with the reason.
//
// Thread-safety: one thread; it starts children and owns a work folder.
#ifndef TRAINSCOPE_SUITES_CASE_RUNNER_H_
#define TRAINSCOPE_SUITES_CASE_RUNNER_H_

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "base/process.h"
#include "results/figures.h"
#include "results/records.h"
#include "results/results_db.h"
#include "suites/case_hosts.h"
#include "suites/case_job.h"
#include "suites/launch_plan.h"
#include "suites/suite_config.h"

namespace trainscope::suites {

// How a suite runs (suites/runner.h): run_suite's options, which each
// case's run takes too.
struct RunnerOptions {
  std::filesystem::path db_path = "results.db";
  std::filesystem::path hostfile;  // empty: this machine only
  std::string mpirun = "mpirun";   // name on PATH or a path
  std::vector<std::string> extra_mpirun_args;
  std::string tcp_interface;  // empty: the suite's
  std::string cluster;        // --cluster: a virtual cluster's prefix; "": make them
  int repeat = 0;             // > 0 overrides the suite's repetitions
  // Seed of the rounds' shuffled order (several repetitions); unset: drawn
  // from std::random_device. Recorded in the suite's environment as
  // run_order.seed, so an order can be run again.
  std::optional<uint64_t> order_seed;
  std::string filter;    // run only cases whose name contains this
  bool dry_run = false;  // print the plan; run and write nothing
  // Measure the machine's limits (suites/limit_probes.h) before the first
  // case and store them with the suite, for the report's shares of them.
  bool measure_limits = true;
  std::optional<double> timeout_s;          // overrides the suite's per-case timeout
  std::filesystem::path trainscope_binary;  // empty: this executable
  double poll_interval_s = 0.25;
  std::string command_line;  // stored with the suite
  std::FILE* out = stdout;
  std::FILE* progress = stderr;
};

// One case's run as it ended: its database row, what its job reported and
// the figures derived from that (results/figures.h).
struct RunOutcome {
  results::RunRow row;                         // case, status, exit code, error
  std::optional<results::RunSummary> summary;  // train jobs that wrote one
  results::RunFigures figures;
  int64_t peak_rss_bytes = -1;  // the ranks' VmHWM summed, else the poller's peak
  double seconds = 0;           // wall time of the job
  bool interrupted = false;     // the runner was interrupted while it ran
};

// The last `max_lines` lines of a file (at most 4 KiB), trimmed.
std::string file_tail(const std::filesystem::path& path, int max_lines);

// What a suite run will do, checked before anything is written.
struct SuitePlan {
  PlanContext ctx;
  std::vector<const SuiteCase*> cases;  // those --filter selects, skipped ones included
  int repetitions = 1;
  double timeout_s = 0;  // per case unless the case says otherwise
};

// Bad input (a negative --repeat, a filter matching nothing, a hostfile, a
// missing mpirun) throws trainscope::Error.
SuitePlan plan_suite(const Suite& suite, const RunnerOptions& options);

// The case as the database records it before its job starts.
results::RunCase run_case_record(const SuiteCase& c, const LaunchPlan& plan, int repetition,
                                 const CaseHosts& where);

class CaseRunner {
 public:
  // `signals` must outlive the runner: an interrupt stops the job running.
  CaseRunner(const Suite& suite, const RunnerOptions& options, const SuitePlan& plan,
             results::ResultsDb& db, const SignalGuard& signals);

  // Runs repetition `rep` of `c` with `binary` (empty: the plan's trainscope)
  // and records it in suite `suite_id`. A case that cannot run here is
  // recorded skipped; one whose hosts cannot be made ready, failed.
  RunOutcome run(const SuiteCase& c, int rep, int64_t suite_id,
                 const std::filesystem::path& binary = {});

  // The job of `c` as run() would launch it with `binary`, and the file its
  // summary goes to; for callers that run it themselves (the work lane).
  struct Prepared {
    CaseHosts where;
    std::string hosts_error;  // its hosts could not be made ready
    LaunchPlan plan;
    std::filesystem::path output;
  };
  Prepared prepare(const SuiteCase& c, const std::filesystem::path& binary = {});

  const std::filesystem::path& work_dir() const { return work_dir_.path(); }

 private:
  RunOutcome run_resolved(const SuiteCase& c, int rep, int64_t suite_id,
                          const std::filesystem::path& binary);
  void record(RunOutcome& out, const JobOutcome& job, Ingested in,
              const std::filesystem::path& stderr_path);
  void keep_replay_source(const SuiteCase& c, const RunOutcome& out);

  const Suite& suite_;
  const RunnerOptions& options_;
  const SuitePlan& plan_;
  results::ResultsDb& db_;
  const SignalGuard& signals_;
  ScopedTempDir work_dir_;
  CaseHostProvider hosts_;  // after work_dir_: its clusters go down first
  int index_ = 0;           // the job's files are case-<index>.*
  // Training cases' latest summaries, by case name, for replay_from.
  std::map<std::string, std::filesystem::path> replay_sources_;
};

}  // namespace trainscope::suites

#endif  // TRAINSCOPE_SUITES_CASE_RUNNER_H_
