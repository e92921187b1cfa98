// The suite runner: runs every case of a suite as its own job, watches it,
// and records it in the results database.
//
// Per case (and repetition) the runner builds one command line (plan_case):
// `mpirun -np N ... trainscope train|allreduce-bench ...`, or the bare
// trainscope command for a one-rank case on the default transport without a
// hostfile. mpirun gets --oversubscribe when the ranks exceed the cores (or
// the hostfile's slots), --bind-to from the suite (default none), the
// root-allow variables when running as root, and the transport's MCA
// settings; out-of-band and TCP traffic are pinned to the suite's
// tcp_interface (default lo, so single-box runs never leave 127.0.0.0/8), or
// to RunnerOptions::tcp_interface. A hostfile naming other hosts needs an
// interface that reaches them: with lo the job would hang until its timeout,
// so run_suite rejects that combination up front.
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
// failed with its exit code and the tail of its stderr, and the suite goes
// on. The results database has one writer: this runner.
//
// Output: progress (case i of n, elapsed, ETA) on `progress`; one result row
// per case on `out` with fixed columns (see format_result_row).
//
// Thread-safety: run_suite() installs SIGINT/SIGTERM/SIGCHLD handlers while it
// runs (a profiler::SignalGuard, restored on return) and starts children; call
// it from one thread, one at a time.
#ifndef TRAINSCOPE_SUITES_RUNNER_H_
#define TRAINSCOPE_SUITES_RUNNER_H_

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "profiler/process_poller.h"
#include "results/records.h"
#include "suites/suite_config.h"

namespace trainscope::suites {

struct RunnerOptions {
  std::filesystem::path db_path = "results.db";
  std::filesystem::path hostfile;          // empty: this machine only
  std::string mpirun = "mpirun";           // name on PATH or a path
  std::vector<std::string> extra_mpirun_args;
  std::string tcp_interface;               // empty: the suite's tcp_interface
  int repeat = 0;                          // > 0 overrides the suite's repetitions
  std::string filter;                      // run only cases whose name contains this
  bool dry_run = false;                    // print the plan; run and write nothing
  std::optional<double> timeout_s;         // overrides the suite's per-case timeout
  std::filesystem::path trainscope_binary; // empty: this executable
  double poll_interval_s = 0.25;
  std::string command_line;                // stored with the suite
  std::FILE* out = stdout;
  std::FILE* progress = stderr;
};

// What the runner needs to know about the machine to plan a case.
struct PlanContext {
  std::filesystem::path trainscope_binary;
  std::string mpirun;          // resolved path
  std::filesystem::path hostfile;
  int slots = 1;               // cores, or the hostfile's total slots
  bool as_root = false;
  std::vector<std::string> extra_mpirun_args;
  std::string tcp_interface;   // empty: the suite's
};

struct LaunchPlan {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // extra NAME=VALUE entries
  bool uses_mpirun = false;
  nlohmann::json transport = nlohmann::json::object();  // MCA settings asked for
};

// The command for one case; `output` is the --summary (train) or --jsonl
// (allreduce) file the job writes.
LaunchPlan plan_case(const Suite& suite, const SuiteCase& c, const PlanContext& ctx,
                     const std::filesystem::path& output);

// profiler::find_program(name, flag), but a program that is not found or
// not executable is bad input (kExitBadInput) to the suite.
std::string resolve_executable(const std::string& name, const std::string& flag);

// One finished (or skipped) case.
struct CaseResult {
  std::string name;
  int repetition = 0;
  int ranks = 1;
  std::string mode, reduce, bucket;  // bucket: "-" when not applicable
  std::string threads;               // per rank; "auto" when left to the trainer
  results::RunStatus status = results::RunStatus::kOk;
  int exit_code = 0;
  std::string error;                 // failure or skip reason
  double tokens_per_s = -1;          // < 0: unknown
  double step_ms_median = -1;
  double comm_share = -1;            // comm time / step time, 0..1
  int64_t peak_rss_bytes = -1;       // ranks' RSS summed, peak over polls
  double avg_busbw_gbps = -1;        // allreduce cases
  double seconds = 0;
  int64_t run_id = 0;
};

struct SuiteResult {
  int64_t suite_id = 0;  // 0 for a dry run
  std::vector<CaseResult> cases;
  bool interrupted = false;
  // 130 if interrupted, 1 if any case failed, else 0.
  int exit_code() const;
};

// Runs (or, with dry_run, plans) the suite. Bad input (hostfile, missing
// mpirun, database) throws trainscope::Error before anything is written.
SuiteResult run_suite(const Suite& suite, const RunnerOptions& options);

// The fixed result table: header and one row.
std::string format_result_header();
std::string format_result_row(const CaseResult& r);

// The last `max_lines` lines of a file (at most 4 KiB), trimmed.
std::string file_tail(const std::filesystem::path& path, int max_lines);

}  // namespace trainscope::suites

#endif  // TRAINSCOPE_SUITES_RUNNER_H_
