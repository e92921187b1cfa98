#include "profiler/monitor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "kernels/check.h"
#include "kernels/atomic_file.h"
#include "profiler/trace.h"

namespace trainscope::profiler {
namespace {

// State shared with the signal handlers: only async-signal-safe operations.
int g_wake_pipe[2] = {-1, -1};
volatile sig_atomic_t g_forward_pid = 0;    // launch mode: the child
volatile sig_atomic_t g_stop_requested = 0;  // attach mode: stop on SIGINT/SIGTERM
// Launch mode: a signal sent before the child's pid was known, forwarded
// once it is (else it would be lost and the monitor would wait for a child
// that was never told to stop).
volatile sig_atomic_t g_pending_signal = 0;

void wake() {
  const char byte = 1;
  const int saved = errno;
  [[maybe_unused]] ssize_t n = ::write(g_wake_pipe[1], &byte, 1);
  errno = saved;
}

void on_sigchld(int) { wake(); }

void on_terminate(int sig, siginfo_t* info, void*) {
  const pid_t child = g_forward_pid;
  if (child > 0) {
    // Sent by a process (kill, a job scheduler): pass it on. From the
    // terminal (SI_KERNEL) the child's process group got it already.
    if (info->si_code == SI_USER || info->si_code == SI_QUEUE) ::kill(child, sig);
  } else {
    g_stop_requested = 1;
    if (info->si_code == SI_USER || info->si_code == SI_QUEUE) g_pending_signal = sig;
  }
  wake();
}

// Installs the handlers and the wake pipe; restores everything on exit.
class SignalScope {
 public:
  SignalScope() {
    TS_CHECK(::pipe2(g_wake_pipe, O_CLOEXEC | O_NONBLOCK) == 0) << std::strerror(errno);
    struct sigaction sa {};
    sa.sa_handler = on_sigchld;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGCHLD, &sa, &old_chld_);
    struct sigaction st {};
    st.sa_sigaction = on_terminate;
    st.sa_flags = SA_RESTART | SA_SIGINFO;
    sigemptyset(&st.sa_mask);
    ::sigaction(SIGINT, &st, &old_int_);
    ::sigaction(SIGTERM, &st, &old_term_);
    g_forward_pid = 0;
    g_stop_requested = 0;
    g_pending_signal = 0;
  }
  ~SignalScope() {
    ::sigaction(SIGCHLD, &old_chld_, nullptr);
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
    g_forward_pid = 0;
    ::close(g_wake_pipe[0]);
    ::close(g_wake_pipe[1]);
    g_wake_pipe[0] = g_wake_pipe[1] = -1;
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

  // Sleeps until `timeout_ms` passes or a signal arrives.
  static void wait(int timeout_ms) {
    pollfd p{g_wake_pipe[0], POLLIN, 0};
    if (::poll(&p, 1, std::max(0, timeout_ms)) > 0) {
      char buf[64];
      while (::read(g_wake_pipe[0], buf, sizeof(buf)) > 0) {
      }
    }
  }

 private:
  struct sigaction old_chld_ {}, old_int_ {}, old_term_ {};
};

double now_seconds() { return static_cast<double>(trace_clock_ns()) * 1e-9; }

// Starts argv; throws with a shell's exit codes if exec fails.
pid_t launch(const std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int exec_pipe[2];
  TS_CHECK(::pipe2(exec_pipe, O_CLOEXEC) == 0) << std::strerror(errno);
  std::fflush(nullptr);  // or buffered output would be printed twice
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(exec_pipe[0]);
    ::close(exec_pipe[1]);
    throw Error("cannot start " + command[0] + ": fork failed: " + std::strerror(err),
                kExitFailure);
  }
  if (pid == 0) {
    ::close(exec_pipe[0]);
    ::execvp(argv[0], argv.data());
    const int err = errno;
    [[maybe_unused]] ssize_t n = ::write(exec_pipe[1], &err, sizeof(err));
    ::_exit(127);
  }
  ::close(exec_pipe[1]);
  int exec_errno = 0;
  ssize_t n;
  do {
    n = ::read(exec_pipe[0], &exec_errno, sizeof(exec_errno));
  } while (n < 0 && errno == EINTR);
  ::close(exec_pipe[0]);
  if (n == sizeof(exec_errno)) {  // exec failed: the pipe carried its errno
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (exec_errno == ENOENT) throw Error("command not found: " + command[0], 127);
    throw Error("cannot execute " + command[0] + ": " + std::strerror(exec_errno), 126);
  }
  return pid;
}

int shell_exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitFailure;
}

int role_order(const ProcessSummary& p) {
  switch (p.role) {
    case ProcessRole::kLauncher:
      return 0;
    case ProcessRole::kRank:
      return 1;
    default:
      return 2;
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
      std::fprintf(options_.out,
                   "[monitor] t=%.1fs processes=%d rss=%s average=%s peak=%s pss=%s\n", runtime,
                   t.current_processes, format_bytes(t.current_rss_bytes).c_str(),
                   format_bytes(t.average_rss_bytes).c_str(),
                   format_bytes(t.peak_rss_bytes).c_str(),
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
    text += fmt::format("trainscope monitor  pid {}  runtime {:.1f} s  processes {}  interval {} ms\n",
                        pid_, runtime, t.current_processes,
                        std::lround(options_.interval_seconds * 1000));
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
  if (!launching && ::kill(options.attach_pid, 0) != 0 && errno == ESRCH)
    throw Error(fmt::format("no process with PID {}", options.attach_pid));

  SignalScope signals;
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

  const double start = now_seconds();
  result.pid = launching ? launch(options.command) : options.attach_pid;
  if (launching) {
    g_forward_pid = result.pid;
    // From here the handler forwards by itself; before, it could only note.
    if (g_pending_signal != 0) ::kill(result.pid, g_pending_signal);
  }

  PollerOptions poller_options;
  poller_options.read_pss = options.read_pss;
  poller_options.include_root = !launching;  // in launch mode the root is us
  ProcessPoller poller(launching ? ::getpid() : options.attach_pid, poller_options);
  Display display(options, result.pid);

  const int interval_ms = std::max(1, static_cast<int>(std::lround(options.interval_seconds * 1000)));
  double next_poll = start;
  bool child_done = false;
  int status = 0;
  for (;;) {
    if (launching) {
      // Reap the child and any adopted orphans that have exited.
      int st = 0;
      pid_t reaped;
      while ((reaped = ::waitpid(-1, &st, WNOHANG)) > 0) {
        if (reaped == result.pid) {
          child_done = true;
          status = st;
        }
      }
      if (child_done) break;
    } else if (g_stop_requested) {
      break;
    }
    const double now = now_seconds();
    if (now >= next_poll) {
      poller.poll();
      if (!launching && poller.last_poll().empty()) break;  // the attached process is gone
      display.update(poller, now - start);
      next_poll += options.interval_seconds;
      if (next_poll < now) next_poll = now + options.interval_seconds;  // fell behind
    }
    SignalScope::wait(std::min(interval_ms,
                               static_cast<int>(std::ceil((next_poll - now_seconds()) * 1000))));
  }
  result.runtime_seconds = now_seconds() - start;
  result.exit_code = launching ? shell_exit_code(status) : kExitOk;
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
    out += fmt::format("{:<9} {:>4} {:>8} {:>11} {:>11} {:>11} {:>11} {:>8.1f}  {:.70}\n",
                       role_name(p.role), rank_text(p.rank), p.pid,
                       format_bytes(static_cast<double>(p.peak_rss_bytes)),
                       format_bytes(p.average_rss_bytes),
                       format_bytes(static_cast<double>(p.peak_pss_bytes)),
                       format_bytes(p.average_pss_bytes),
                       p.last_seen_seconds - p.first_seen_seconds, p.command);
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
