#include "profiler/monitor.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "base/check.h"
#include "base/atomic_file.h"
#include "profiler/proc_fs.h"
#include "profiler/supervise.h"

namespace trainscope::profiler {
namespace {

// Reaps the adopted orphans (we are their subreaper) that have exited;
// `child` itself is left to its ChildProcess. waitid() only peeks (WNOWAIT)
// so that the child's status is not taken here.
void reap_exited_orphans(pid_t child) {
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
    if (info.si_pid == child) return;  // first in line: supervise() reaps it and ends
    ::waitpid(info.si_pid, nullptr, 0);
  }
}

int role_order(const ProcessSummary& p) {
  switch (p.role) {
    case ProcessRole::kLauncher: return 0;
    case ProcessRole::kRank: return 1;
    default: return 2;
  }
}

std::vector<ProcessSummary> sorted_processes(std::vector<ProcessSummary> processes) {
  std::sort(processes.begin(), processes.end(), [](const auto& a, const auto& b) {
    if (role_order(a) != role_order(b)) return role_order(a) < role_order(b);
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.pid < b.pid;
  });
  return processes;
}

std::string rank_text(int rank) { return rank >= 0 ? std::to_string(rank) : "-"; }

class Display {
 public:
  Display(const MonitorOptions& options, pid_t pid)
      : options_(options), pid_(pid), mode_(options.display) {
    if (mode_ == MonitorDisplay::kAuto)
      mode_ = ::isatty(::fileno(options.out)) ? MonitorDisplay::kLive : MonitorDisplay::kPlain;
  }

  void update(const ProcessPoller& poller, double runtime) {
    if (mode_ == MonitorDisplay::kLive) {
      live(poller, runtime);
    } else if (mode_ == MonitorDisplay::kPlain && runtime >= next_plain_) {
      const TreeTotals& t = poller.totals();
      std::fprintf(
          options_.out, "[monitor] t=%.1fs processes=%d rss=%s average=%s peak=%s pss=%s\n",
          runtime, t.current_processes, format_bytes(t.current_rss_bytes).c_str(),
          format_bytes(t.average_rss_bytes).c_str(), format_bytes(t.peak_rss_bytes).c_str(),
          format_bytes(t.current_pss_bytes).c_str());
      std::fflush(options_.out);
      next_plain_ = runtime + options_.plain_every_seconds;
    }
  }

 private:
  void live(const ProcessPoller& poller, double runtime) {
    constexpr std::size_t kMaxRows = 24;
    std::string text;
    // Move to the start of the previous frame and clear it.
    if (lines_ > 0) text += fmt::format("\x1b[{}F\x1b[J", lines_);
    const TreeTotals& t = poller.totals();
    text += fmt::format(
        "trainscope monitor  pid {}  runtime {:.1f} s  processes {}  interval {} ms\n", pid_,
        runtime, t.current_processes, std::lround(options_.interval_seconds * 1000));
    text += fmt::format("{:<9} {:>4} {:>8} {:>11} {:>11}  {}\n", "ROLE", "RANK", "PID", "RSS",
                        "PEAK RSS", "COMMAND");
    std::size_t rows = 0, hidden = 0;
    for (const ProcessSummary& p : sorted_processes(poller.process_summaries())) {
      if (!p.alive) continue;
      if (rows++ >= kMaxRows) {
        ++hidden;
        continue;
      }
      text += fmt::format("{:<9} {:>4} {:>8} {:>11} {:>11}  {:.60}\n", role_name(p.role),
                          rank_text(p.rank), p.pid, format_bytes(p.current_rss_bytes),
                          format_bytes(p.peak_rss_bytes), p.command);
    }
    if (hidden > 0) text += fmt::format("... {} more\n", hidden);
    text += fmt::format("TOTAL RSS  current {}  average {}  peak {}   PSS current {}\n",
                        format_bytes(t.current_rss_bytes), format_bytes(t.average_rss_bytes),
                        format_bytes(t.peak_rss_bytes), format_bytes(t.current_pss_bytes));
    lines_ = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    std::fputs(text.c_str(), options_.out);
    std::fflush(options_.out);
  }

  const MonitorOptions& options_;
  pid_t pid_;
  MonitorDisplay mode_;
  int lines_ = 0;
  double next_plain_ = 0;
};

}  // namespace

MonitorResult run_monitor(const MonitorOptions& options) {
  const bool launching = !options.command.empty();
  if (launching == (options.attach_pid > 0))
    throw Error("give either a command to run or a PID to attach to (--pid), not both");
  if (!(options.interval_seconds > 0) || !std::isfinite(options.interval_seconds))
    throw Error(fmt::format("interval must be a positive number of seconds, got {}",
                            options.interval_seconds));
  if (!launching && !process_alive(options.attach_pid))
    throw Error(fmt::format("no process with PID {}", options.attach_pid));

  // Launch mode: SIGINT/SIGTERM are the child's to act on; attach mode: ours.
  SignalGuard signals(launching ? SignalPolicy::kForwardToChild : SignalPolicy::kRecordInterrupt);
  MonitorResult result;
  int was_subreaper = 0;
  if (launching) {
    // Orphaned descendants re-parent to us instead of init: the tree stays whole.
    ::prctl(PR_GET_CHILD_SUBREAPER, &was_subreaper);
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  struct RestoreSubreaper {
    bool active;
    int previous;
    ~RestoreSubreaper() {
      if (active) ::prctl(PR_SET_CHILD_SUBREAPER, previous);
    }
  } restore{launching, was_subreaper};

  std::optional<ChildProcess> child;
  if (launching) {
    SpawnOptions spawn_options;  // our process group: the terminal's signals reach it
    spawn_options.argv = options.command;
    child.emplace(spawn(spawn_options));
    signals.forward_to(child->pid());
  }
  result.pid = launching ? child->pid() : options.attach_pid;

  PollerOptions poller_options;
  poller_options.read_pss = options.read_pss;
  poller_options.include_root = !launching;  // in launch mode the root is us
  ProcessPoller poller(launching ? ::getpid() : options.attach_pid, poller_options);
  Display display(options, result.pid);

  SuperviseOptions supervise_options;
  supervise_options.poll_interval_seconds = options.interval_seconds;
  supervise_options.on_poll = [&](const ProcessPoller& polled, double elapsed) {
    if (launching)
      reap_exited_orphans(child->pid());
    else if (polled.last_poll().empty())
      return false;  // the attached process is gone
    display.update(polled, elapsed);
    return true;
  };
  const SuperviseResult run =
      supervise(child ? &*child : nullptr, poller, signals, supervise_options);
  if (launching) reap_exited_orphans(-1);  // the child is reaped: take every exited orphan
  result.runtime_seconds = run.runtime_seconds;
  result.exit_code = launching ? run.exit_code : kExitOk;
  result.samples = poller.samples();
  result.processes = sorted_processes(poller.process_summaries());
  result.totals = poller.totals();
  result.warnings = poller.take_warnings();
  return result;
}

std::string format_summary(const MonitorResult& r) {
  std::string out = fmt::format(
      "# trainscope monitor: pid {}, runtime {:.2f} s, {} polls, {} processes seen, exit code {}\n",
      r.pid, r.runtime_seconds, r.totals.polls, r.processes.size(), r.exit_code);
  out += fmt::format("{:<9} {:>4} {:>8} {:>11} {:>11} {:>11} {:>11} {:>8}  {}\n", "ROLE", "RANK",
                     "PID", "PEAK RSS", "AVG RSS", "PEAK PSS", "AVG PSS", "SEEN(s)", "COMMAND");
  for (const ProcessSummary& p : r.processes) {
    out += fmt::format(
        "{:<9} {:>4} {:>8} {:>11} {:>11} {:>11} {:>11} {:>8.1f}  {:.70}\n", role_name(p.role),
        rank_text(p.rank), p.pid, format_bytes(static_cast<double>(p.peak_rss_bytes)),
        format_bytes(p.average_rss_bytes), format_bytes(static_cast<double>(p.peak_pss_bytes)),
        format_bytes(p.average_pss_bytes), p.last_seen_seconds - p.first_seen_seconds, p.command);
  }
  out += fmt::format("{:<9} {:>4} {:>8} {:>11} {:>11} {:>11} {:>11}  max {} processes at once\n",
                     "TOTAL", "", "", format_bytes(static_cast<double>(r.totals.peak_rss_bytes)),
                     format_bytes(r.totals.average_rss_bytes),
                     format_bytes(static_cast<double>(r.totals.peak_pss_bytes)),
                     format_bytes(r.totals.average_pss_bytes), r.totals.max_processes);
  out += "# TOTAL = sum over the tree at each poll; peak and average over polls.\n";
  for (const std::string& w : r.warnings) out += "# warning: " + w + "\n";
  return out;
}

namespace {
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}
}  // namespace

std::string samples_to_csv(const std::vector<ProcessSample>& samples) {
  std::string out = "time_s,pid,ppid,role,rank,rss_bytes,pss_bytes,command\n";
  for (const ProcessSample& s : samples) {
    out += fmt::format("{:.3f},{},{},{},{},{},{},{}\n", s.time_seconds, s.pid, s.ppid,
                       role_name(s.role), s.rank, s.rss_bytes, s.pss_bytes, csv_field(s.command));
  }
  return out;
}

void write_samples_csv(const std::string& path, const std::vector<ProcessSample>& samples) {
  write_file_atomically(path, samples_to_csv(samples));
}

}  // namespace trainscope::profiler
