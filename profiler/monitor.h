// `trainscope monitor`: run a command (or attach to a running process) and
// record the memory of its whole process tree until it ends.
//
// run_monitor() either starts `command` (found on PATH as a shell does, see
// base/process.h) in the monitor's process group (not one of its own),
// so that it stays in the terminal's foreground, or follows an existing PID;
// it polls the tree with a ProcessPoller every `interval_seconds`
// (profiler::supervise), shows progress on `out`, and returns every sample
// plus per-process and total summaries. In launch mode the monitor makes
// itself the child subreaper, so descendants whose parent exits (a shell's
// background jobs, daemonizing helpers) are re-parented to it and stay in
// the tree.
//
// Exit status (MonitorResult::exit_code), as a shell reports it: the child's
// exit code; 128 + N if signal N killed it. Attach mode cannot learn a
// non-child's status: 0. Errors, thrown as trainscope::Error naming the
// culprit: command not found (exit code 127), not executable (126), no such
// PID (2), bad interval (2).
//
// Signals: SIGINT/SIGTERM sent to the monitor with kill() are forwarded to the
// child; those the terminal sends reach the child's process group directly
// and are not sent twice. The monitor keeps polling until the child exits.
// In attach mode SIGINT/SIGTERM stop the monitor (not the process).
//
// Thread-safety: run_monitor() installs process-wide signal handlers while it
// runs (restored before returning); run one at a time.
#ifndef TRAINSCOPE_PROFILER_MONITOR_H_
#define TRAINSCOPE_PROFILER_MONITOR_H_

#include <sys/types.h>

#include <cstdio>
#include <string>
#include <vector>

#include "kernels/storage.h"
#include "profiler/process_poller.h"

namespace trainscope::profiler {

enum class MonitorDisplay {
  kAuto,   // live if `out` is a terminal, else plain
  kLive,   // dashboard redrawn in place with ANSI escapes, every poll
  kPlain,  // one line every plain_every_seconds
  kNone,
};

struct MonitorOptions {
  std::vector<std::string> command;  // launch mode: argv of the child
  pid_t attach_pid = 0;              // attach mode when > 0 (command empty)
  double interval_seconds = 0.2;     // between polls; > 0
  double plain_every_seconds = 1.0;  // period of the plain progress lines
  bool read_pss = true;
  MonitorDisplay display = MonitorDisplay::kAuto;
  std::FILE* out = stdout;
};

struct MonitorResult {
  int exit_code = 0;
  double runtime_seconds = 0;
  pid_t pid = 0;  // the child (launch) or the attached process
  // All samples in poll order: the hook for --csv and the results database.
  std::vector<ProcessSample> samples;
  std::vector<ProcessSummary> processes;
  TreeTotals totals;
  std::vector<std::string> warnings;  // permission errors...
};

MonitorResult run_monitor(const MonitorOptions& options);

using kernels::format_bytes;  // its tables' sizes
// Final table: per-process role, rank, pid, peak and average RSS/PSS,
// command; then the totals.
std::string format_summary(const MonitorResult& result);
// time_s,pid,ppid,role,rank,rss_bytes,pss_bytes,command (RFC 4180 quoting).
std::string samples_to_csv(const std::vector<ProcessSample>& samples);
// samples_to_csv() written atomically; Error naming `path` on failure.
void write_samples_csv(const std::string& path, const std::vector<ProcessSample>& samples);

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_MONITOR_H_
