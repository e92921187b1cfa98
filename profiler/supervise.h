// Watching a child's whole process tree to its end: run a helper program to
// completion with a timeout (run_to_completion), or supervise a job while a
// ProcessPoller samples its tree (supervise); either stops the whole tree,
// descendants that left the child's group included, on a timeout or an
// interrupt. The child itself is base/process.h's.
//
// Thread-safety: as base/process.h; one supervise() at a time per guard.
#ifndef TRAINSCOPE_PROFILER_SUPERVISE_H_
#define TRAINSCOPE_PROFILER_SUPERVISE_H_

#include <functional>
#include <optional>
#include <string>

#include "base/process.h"
#include "profiler/process_poller.h"

namespace trainscope::profiler {

// What run_to_completion() saw.
struct CompletedRun {
  int exit_code = 0;
  bool timed_out = false;    // killed (with its tree) after the timeout
  bool interrupted = false;  // killed (with its tree) on the guard's SIGINT/SIGTERM
  std::string out, err;      // everything the child wrote to stdout and stderr
};

// Runs options.argv to its end with stdin from /dev/null and its stdout and
// stderr captured (through files in a private temporary directory: options'
// stream files are ignored). One that outlives `timeout_seconds` is stopped
// with kill_tree(), its descendants included, and reported timed_out; with
// `signals`, so is one running when the guard records SIGINT or SIGTERM
// (interrupted; nothing is started once it has). For short helper programs
// (scripts, probes, gnuplot), not jobs to supervise. Throws as spawn() does.
CompletedRun run_to_completion(SpawnOptions options, double timeout_seconds,
                               const SignalGuard* signals = nullptr);

struct SuperviseOptions {
  double poll_interval_seconds = 0.25;
  std::optional<double> timeout_seconds;  // then kill the tree: timed_out
  // After every poll, with the seconds since supervise() began. Returning
  // false ends supervision (e.g. the followed process is gone).
  std::function<bool(const ProcessPoller& poller, double elapsed_seconds)> on_poll;
  // The tree is an MPI job: once it has ended, whatever ended it (itself, a
  // timeout's or an interrupt's kill, a kill from outside), what Open MPI had
  // no time to clean up is removed (noted from its ranks as they appear and
  // just before a kill; its ranks that outlive their launcher are ended
  // first: profiler/mpi_leftovers.h).
  bool remove_mpi_leftovers = false;
};

struct SuperviseResult {
  int exit_code = 0;  // the child's (0 without a child)
  bool timed_out = false;
  bool interrupted = false;    // by the guard's SIGINT/SIGTERM
  double runtime_seconds = 0;  // since the child was spawned, else since the call
};

// Polls the tree every poll_interval_seconds until the child exits, the
// timeout (counted like runtime_seconds) passes or the guard records an
// interrupt (then kill_tree() with a fresh poll's processes). `child` may be
// null (following a process that is not ours): then on_poll, the timeout
// and interrupts end it.
SuperviseResult supervise(ChildProcess* child, ProcessPoller& poller, const SignalGuard& signals,
                          const SuperviseOptions& options);

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_SUPERVISE_H_
