// The suite runner: runs every case of a suite as its own job, watches it,
// and records it in the results database.
//
// run_suite goes in stages: plan (every input checked and each case's command
// line built, suites/launch_plan.h, before anything is written), limits (the
// machine's sgemm, memcpy and all-reduce peaks at what the cases use,
// suites/limit_probes.h, stored with the suite; --no-limits), launch (one
// job per case and repetition; with several repetitions they run in rounds,
// every case once per round, the first in the suite's order and each later
// one in an order shuffled from a seed the suite records, so that a machine drifting during the
// suite slows every case alike instead of the last ones), ingest (the job's summary or sweep rows
// into the database) and print (one row per case).
//
// Cases with hosts > 1 run on the hostfile's hosts, on the virtual cluster
// given by `cluster`, or on one the runner brings up and takes down, with
// the link measured first (suites/case_hosts.h); where none can be made
// they are skipped with the reason, and a cluster that fails to come up
// fails its case only.
//
// Multi-host runs (a hostfile): rank 0 writes the case's summary on its own
// host (the hostfile's first), so the per-case files go to a temporary
// folder beside the results database rather than /tmp: that folder must be
// shared by the hosts (or rank 0 must run on this one). The poller sees only
// this machine's processes; the figures that matter come from the ranks'
// summary.
//
// The job runs in its own process group with stdout/stderr captured to files;
// a ProcessPoller samples its process tree (stored as poller_samples). A job
// that outlives the suite's timeout, or any job when the runner gets
// SIGINT/SIGTERM, is killed (SIGTERM, then SIGKILL, to the group and every
// process of its tree). The job's --summary JSON (or --jsonl sweep rows) is
// ingested in one finish_run() transaction; a job that failed is recorded
// failed with its exit code and the tail of its stderr (a train job that
// wrote no summary also with where each rank was last seen: the status files
// its ranks keep, `train --status-dir`, beside its summary), and the suite
// goes on. The results database has one writer: this runner.
//
// Output: progress (case i of n, elapsed, ETA) on `progress`; one result row
// per case on `out` with fixed columns (see format_result_row).
//
// Thread-safety: run_suite() installs SIGINT/SIGTERM/SIGCHLD handlers while it
// runs (a SignalGuard, restored on return) and starts children; call
// it from one thread, one at a time.
#ifndef TRAINSCOPE_SUITES_RUNNER_H_
#define TRAINSCOPE_SUITES_RUNNER_H_

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "results/figures.h"
#include "results/records.h"
#include "results/results_db.h"
#include "suites/case_runner.h"
#include "suites/launch_plan.h"
#include "suites/suite_config.h"

namespace trainscope::suites {

struct SuiteResult {
  int64_t suite_id = 0;          // 0 for a dry run
  std::vector<RunOutcome> runs;  // in run order; a dry run lists its skipped cases
  bool interrupted = false;
  // 130 if interrupted, 1 if any case failed, else 0.
  int exit_code() const;
};

// Runs (or, with dry_run, plans) the suite. Bad input (hostfile, missing
// mpirun, database) throws trainscope::Error before anything is written.
SuiteResult run_suite(const Suite& suite, const RunnerOptions& options);

// The fixed result table: header and one row, the case column name_width
// wide: at least kMinCaseColumn, and as wide as the suite's longest case name
// with its "#N" repetition suffix (result_name_width), so that rows line up.
inline constexpr int kMinCaseColumn = 34;
int result_name_width(const std::vector<std::string>& case_names, int repetitions);
std::string format_result_header(int name_width = kMinCaseColumn);
std::string format_result_row(const RunOutcome& r, int name_width = kMinCaseColumn);

}  // namespace trainscope::suites

#endif  // TRAINSCOPE_SUITES_RUNNER_H_
