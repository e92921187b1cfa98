#include "suites/case_job.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "base/check.h"
#include "results/allreduce_algorithms.h"

namespace trainscope::suites {
namespace {

namespace fs = std::filesystem;

// One line per rank ("\n  rank 1 (host): step 3, phase forward, ..."), from
// the status files the ranks kept; empty when none wrote one (the job ended
// before training began, e.g. on a bad flag).
std::string ranks_last_seen(const fs::path& status_dir, int ranks) {
  std::string text;
  bool any = false;
  for (int r = 0; r < ranks; ++r) {
    const fs::path path = results::rank_status_path(status_dir, r);
    std::string line = fmt::format("rank {}: no status file (not started, or on another host)", r);
    if (fs::exists(path)) {
      any = true;
      try {
        const profiler::RankStatus status = results::load_rank_status(path);
        line = fmt::format("rank {} ({}): {}", r, status.host, profiler::describe(status));
      } catch (const Error& e) {
        line = fmt::format("rank {}: {}", r, e.what());
      }
    }
    text += "\n  " + line;
  }
  return any ? text : "";
}

// A stalled job (--stall-action abort) ended by a rank's watchdog: the first
// watchdog line that names the ranks not arrived, else any of them.
std::string stall_problem(const fs::path& stderr_path) {
  std::ifstream in(stderr_path);
  std::string first, line;
  while (std::getline(in, line)) {
    const size_t at = line.find("trainscope: rank ");
    if (at == std::string::npos || line.find("; ending the job") == std::string::npos) continue;
    std::string said = line.substr(at + std::string("trainscope: ").size());
    if (said.find("not arrived: ") != std::string::npos) return "stalled: " + said;
    if (first.empty()) first = said;
  }
  return first.empty() ? fmt::format("stalled: a rank's watchdog ended the job (exit {})",
                                     static_cast<int>(kExitStalled))
                       : "stalled: " + first;
}

std::string job_problem(const JobOutcome& job, double timeout_s, const fs::path& stderr_path) {
  if (job.run.interrupted) return "interrupted";
  if (job.run.timed_out) return fmt::format("timed out after {:g} s (killed)", timeout_s);
  if (!job.start_error.empty()) return job.start_error;
  if (job.run.exit_code == kExitStalled) return stall_problem(stderr_path);
  if (job.run.exit_code != 0) return fmt::format("exit code {}", job.run.exit_code);
  return "";
}

// Sweep rows say how they were reduced. The Open MPI algorithm is the
// runner's mpirun setting, which the bench does not interpret, so it comes
// from the case; rows of another algorithm than the case asked for are not
// this case's figures (a binary that ignored --allreduce).
void label_sweep_rows(const SuiteCase& c, Ingested& in) {
  for (results::AllReduceRow& row : in.rows) {
    row.mpi_algorithm = c.mpi_algorithm;
    const std::string_view asked = enum_name(c.train.allreduce);
    if (row.algorithm != asked && in.problem.empty()) {
      in.problem = fmt::format(
          "the sweep rows say all-reduce algorithm '{}' but the case asked "
          "for '{}'",
          row.algorithm, asked);
    }
  }
}

// The plan's command before the job (a pytorch case's export); its error,
// "" when it succeeded.
std::string prepare_job(const LaunchPlan& plan, double timeout_s, const SignalGuard& signals) {
  if (plan.prepare.empty()) return "";
  for (const fs::path& p : plan.prepare_removes) {
    std::error_code ec;
    fs::remove_all(p, ec);
  }
  SpawnOptions options;
  options.argv = plan.prepare;
  options.env = plan.env;
  const profiler::CompletedRun run = profiler::run_to_completion(options, timeout_s, &signals);
  if (run.exit_code == 0 && !run.timed_out && !run.interrupted) return "";
  std::string err = run.err;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  return fmt::format("exporting the run for the PyTorch peer failed ({}): {}",
                     run.timed_out ? "timed out" : fmt::format("exit {}", run.exit_code),
                     err.substr(err.rfind('\n') == std::string::npos ? 0 : err.rfind('\n') + 1));
}

}  // namespace

// Runs the job in its own process group (the runner decides what Ctrl-C
// does to it), stdin from /dev/null, output to files, polling its tree until
// it exits, outlives `timeout_s` or the runner is interrupted; a job that
// does not end is killed with its whole tree.
JobOutcome run_job(const LaunchPlan& plan, const std::filesystem::path& stdout_path,
                   const std::filesystem::path& stderr_path, double timeout_s,
                   double poll_interval_s, const SignalGuard& signals) {
  SpawnOptions spawn_options;
  spawn_options.argv = plan.argv;
  spawn_options.env = plan.env;
  spawn_options.stdin_file = "/dev/null";
  spawn_options.stdout_file = stdout_path;
  spawn_options.stderr_file = stderr_path;
  spawn_options.own_process_group = true;
  JobOutcome outcome;
  std::optional<ChildProcess> job;
  try {
    outcome.start_error = prepare_job(plan, timeout_s, signals);
    if (!outcome.start_error.empty()) {
      outcome.run.exit_code = 1;
      return outcome;
    }
    job.emplace(spawn(spawn_options));
  } catch (const Error& e) {
    outcome.run.exit_code = e.exit_code();
    outcome.start_error = e.what();
    return outcome;
  }
  profiler::ProcessPoller poller(job->pid());
  profiler::SuperviseOptions supervise_options;
  supervise_options.poll_interval_seconds = poll_interval_s;
  supervise_options.timeout_seconds = timeout_s;
  supervise_options.on_poll = [&outcome](const profiler::ProcessPoller& polled, double) {
    int64_t sum = 0;
    for (const auto& s : polled.last_poll()) {
      if (s.role != profiler::ProcessRole::kLauncher && s.rss_bytes > 0) sum += s.rss_bytes;
    }
    if (!polled.last_poll().empty()) outcome.peak_rss_bytes = std::max(outcome.peak_rss_bytes, sum);
    return true;
  };
  supervise_options.remove_mpi_leftovers = true;  // segments, session directory: however it ended
  outcome.run = profiler::supervise(&*job, poller, signals, supervise_options);
  outcome.samples = poller.samples();
  return outcome;
}

Ingested ingest(const SuiteCase& c, const JobOutcome& job, const fs::path& output,
                const fs::path& stderr_path, double timeout_s) {
  Ingested in;
  in.problem = job_problem(job, timeout_s, stderr_path);
  const bool train = c.kind == CaseKind::kTrain;
  if (train && !in.problem.empty()) in.last_seen = ranks_last_seen(status_dir_for(output), c.ranks);
  if (job.run.interrupted || job.run.timed_out) return in;
  try {
    if (!fs::exists(output)) {
      if (in.problem.empty()) {
        in.problem = train ? "the job exited 0 but wrote no summary"
                           : "the job exited 0 but wrote no sweep rows";
      }
    } else if (train) {
      in.summary = results::load_run_summary(output);
    } else {
      in.rows = results::load_allreduce_rows(output);
      label_sweep_rows(c, in);
    }
  } catch (const Error& e) {
    if (in.problem.empty()) in.problem = e.what();
  }
  if (in.summary && in.summary->status == results::RunStatus::kFailed && in.problem.empty()) {
    in.problem = in.summary->error;
  }
  if (in.summary) in.last_seen.clear();  // it said what went wrong itself
  return in;
}

}  // namespace trainscope::suites
