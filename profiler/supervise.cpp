#include "profiler/supervise.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "base/atomic_file.h"
#include "base/check.h"
#include "profiler/clock.h"
#include "profiler/mpi_leftovers.h"

namespace trainscope::profiler {
namespace {

std::vector<pid_t> pids_of(const std::vector<ProcessSample>& samples) {
  std::vector<pid_t> pids;
  for (const ProcessSample& s : samples) pids.push_back(s.pid);
  return pids;
}

}  // namespace

CompletedRun run_to_completion(SpawnOptions options, double timeout_seconds,
                               const SignalGuard* signals) {
  CompletedRun run;
  if (signals != nullptr && signals->interrupted()) {
    run.interrupted = true;  // nothing started, nothing to stop
    return run;
  }
  const ScopedTempDir dir("trainscope-run");
  options.stdin_file = "/dev/null";
  options.stdout_file = dir.path() / "stdout";
  options.stderr_file = dir.path() / "stderr";
  ChildProcess child = spawn(options);
  ProcessPoller tree(child.pid(), {.read_pss = false});  // only its pids are needed
  if (signals != nullptr) {
    // supervise() wakes on the guard's signals as on the child's exit.
    SuperviseOptions supervise_options;
    supervise_options.poll_interval_seconds = std::max(timeout_seconds, 0.01);  // only to kill
    supervise_options.timeout_seconds = timeout_seconds;
    const SuperviseResult r = supervise(&child, tree, *signals, supervise_options);
    run.exit_code = r.exit_code;
    run.timed_out = r.timed_out;
    run.interrupted = r.interrupted;
  } else if (const std::optional<int> code = child.wait_for(timeout_seconds)) {
    run.exit_code = *code;
  } else {
    run.exit_code = child.kill_tree(pids_of(tree.poll()));
    run.timed_out = true;
  }
  run.out = read_file(options.stdout_file);
  run.err = read_file(options.stderr_file);
  return run;
}

SuperviseResult supervise(ChildProcess* child, ProcessPoller& poller, const SignalGuard& signals,
                          const SuperviseOptions& options) {
  TS_CHECK(options.poll_interval_seconds > 0);
  const auto start = child != nullptr ? child->started() : Clock::now();
  const double interval = options.poll_interval_seconds;
  std::optional<MpiJobWatch> mpi_job;
  if (options.remove_mpi_leftovers) mpi_job.emplace();
  auto poll_tree = [&] {
    poller.poll();
    if (mpi_job) mpi_job->note(poller.last_poll());
    return !options.on_poll || options.on_poll(poller, seconds_since(start));
  };
  SuperviseResult result;
  double next_poll = 0;
  for (;;) {
    if (const std::optional<int> code = child != nullptr ? child->try_wait() : std::nullopt) {
      result.exit_code = *code;
      break;
    }
    result.interrupted = signals.interrupted();
    result.timed_out = !result.interrupted && options.timeout_seconds &&
                       seconds_since(start) >= *options.timeout_seconds;
    if (result.interrupted || result.timed_out) {
      poll_tree();  // the processes to stop, as they are now
      if (mpi_job) mpi_job->note_before_kill(poller.last_poll());
      if (child != nullptr) result.exit_code = child->kill_tree(pids_of(poller.last_poll()));
      break;
    }
    if (seconds_since(start) >= next_poll) {
      if (!poll_tree()) break;
      next_poll += interval;
      if (next_poll < seconds_since(start))
        next_poll = seconds_since(start) + interval;  // fell behind
    }
    const double wake_at = std::min(next_poll, options.timeout_seconds.value_or(next_poll));
    if (child != nullptr) {
      child->wait_for_exit_or_signal(wake_at - seconds_since(start));
    } else {
      wait_for_guarded_signal(wake_at - seconds_since(start));
    }
  }
  result.runtime_seconds = seconds_since(start);
  // Whatever ended the job (itself, this kill, or one from outside that
  // left its launcher no time to clean up), once it is gone.
  if (mpi_job && child != nullptr && child->try_wait())
    mpi_job->remove_leftovers(kKillGraceSeconds);
  return result;
}

}  // namespace trainscope::profiler
