// One case's job, from the runner's side: running it under supervision
// (its own process group, output to files, polled for memory, killed with
// its tree at the timeout or on an interrupt), and reading what it left: the
// summary or sweep rows, and what went wrong (the exit code, a stall a
// rank's watchdog ended, where each rank was last seen).
#ifndef TRAINSCOPE_SUITES_CASE_JOB_H_
#define TRAINSCOPE_SUITES_CASE_JOB_H_

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/process.h"
#include "profiler/process_poller.h"
#include "profiler/supervise.h"
#include "results/records.h"
#include "suites/launch_plan.h"
#include "suites/suite_config.h"

namespace trainscope::suites {

// What became of one case's job.
struct JobOutcome {
  profiler::SuperviseResult run;  // exit code, timed out, interrupted, seconds
  int64_t peak_rss_bytes = -1;    // the ranks' RSS summed, peak over polls
  std::vector<profiler::ProcessSample> samples;
  std::string start_error;  // why it could not start (exit code 127/126...)
};

// Runs the job in its own process group (the runner decides what Ctrl-C
// does to it), stdin from /dev/null, output to files, polling its tree until
// it exits, outlives `timeout_s` or the runner is interrupted; a job that
// does not end is killed with its whole tree.
JobOutcome run_job(const LaunchPlan& plan, const std::filesystem::path& stdout_path,
                   const std::filesystem::path& stderr_path, double timeout_s,
                   double poll_interval_s, const SignalGuard& signals);

// What a finished job left, and what went wrong.
struct Ingested {
  std::optional<results::RunSummary> summary;
  std::vector<results::AllReduceRow> rows;
  std::string problem;    // empty: the case is ok
  std::string last_seen;  // a failed train job without a summary: where its ranks were
};

// Whatever the job wrote is read even when it failed: a NaN loss still
// writes a summary. A killed job's files are not trusted.
Ingested ingest(const SuiteCase& c, const JobOutcome& job, const std::filesystem::path& output,
                const std::filesystem::path& stderr_path, double timeout_s);

}  // namespace trainscope::suites

#endif  // TRAINSCOPE_SUITES_CASE_JOB_H_
