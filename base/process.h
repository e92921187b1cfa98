// Child processes: find a program, start it, wait for it, stop it, and the
// signals that end or interrupt the waiting. The one place where trainscope
// spawns, forks, reaps, kills and decodes exit statuses (the suite runner,
// the monitor, gnuplot, the probes and scripts use it; profiler/supervise.h
// watches a child's whole tree), so the rules below hold everywhere:
//
//  * Exit codes as a shell reports them: the child's exit code; 128 + N if
//    signal N killed it; kExitFailure for any other wait status.
//  * Programs are found as execvp() finds them: a name with a '/' is a path;
//    otherwise each PATH entry in order, an empty entry meaning the current
//    directory, entries that cannot be read skipped; PATH unset means
//    "/usr/bin:/bin". Not found: Error with exit code 127; found but not
//    executable: 126.
//  * spawn() reports a failed exec to the caller as an Error (127 when the
//    file or its interpreter does not exist, else 126), never as a child
//    that silently exits 127.
//  * Stopping a tree is SIGTERM to the child's process group (when it has
//    its own), a grace period, then SIGKILL to the group and to every
//    descendant the caller names: mpirun's children may leave its group.
//
// Waiting does not sleep in slices: a ChildProcess holds a pidfd that
// becomes readable when the child exits (so wait_for() needs no process-wide
// handler and works from any thread), and a SignalGuard's handlers write to
// a self-pipe, so a supervisor wakes at once on the child's exit, SIGCHLD,
// SIGINT and SIGTERM. Only without pidfds (Linux before 5.3) does waiting
// look again every 10 ms.
//
// Thread-safety: a ChildProcess belongs to one thread. At most one
// SignalGuard exists at a time in a process (its handlers are process-wide).
// spawn() and find_program() may be called from several threads (while no
// one changes the environment).
#ifndef TRAINSCOPE_BASE_PROCESS_H_
#define TRAINSCOPE_BASE_PROCESS_H_

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace trainscope {

// How long kill_tree() lets a tree stop after SIGTERM before SIGKILL.
inline constexpr double kKillGraceSeconds = 3.0;

// A waitpid() status as a shell's exit code (see above).
int exit_code_from_wait_status(int wait_status);

// The path to run for `name` (see the rule above); a PATH hit is
// "entry/name", the current directory's "./name". Throws Error 127 ("command
// not found: NAME") or 126, naming `flag` (e.g. "--mpirun") when given.
std::string find_program(const std::string& name, const std::string& flag = "");

struct SpawnOptions {
  std::vector<std::string> argv;      // argv[0] is looked up with find_program()
  std::vector<std::string> env;       // NAME=VALUE, replacing inherited NAMEs
  std::filesystem::path working_dir;  // empty: ours
  // Files for the child's standard streams; empty: inherited. stdout and
  // stderr files are created or truncated (mode 0644).
  std::filesystem::path stdin_file, stdout_file, stderr_file;
  // Start in a new process group (the terminal's Ctrl-C then reaches only
  // us, and kill_tree() reaches the whole group). Off keeps the child in our
  // group, in the terminal's foreground, for interactive programs.
  bool own_process_group = false;
};

// A started child, reaped at most once. Destroying one that has not been
// reaped kills it (SIGKILL to its group or itself) and reaps it: no child
// outlives its handle, even when an exception unwinds past it.
class ChildProcess {
 public:
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }

  // Reaps the child if it has exited (never blocks); its exit code, or
  // std::nullopt while it runs. Once reaped, returns the same code again.
  std::optional<int> try_wait();
  // Waits at most `timeout_seconds` for the child to exit.
  std::optional<int> wait_for(double timeout_seconds);
  int wait();

  // SIGTERM to the child's group (or the child); then, once the child has
  // exited or `grace_seconds` have passed, SIGKILL to the group and to
  // `descendants`; returns the child's exit code once it is reaped.
  int kill_tree(std::span<const pid_t> descendants, double grace_seconds = kKillGraceSeconds);

  // Just before it was spawned.
  std::chrono::steady_clock::time_point started() const { return started_; }
  // Waits at most `seconds` for this child to exit, or for a signal a
  // SignalGuard handles (SIGINT, SIGTERM, SIGCHLD), whichever comes first.
  void wait_for_exit_or_signal(double seconds) const;

 private:
  friend ChildProcess spawn(const SpawnOptions& options);
  friend ChildProcess fork_call(const std::function<void()>& body);
  ChildProcess(pid_t pid, bool own_group, std::chrono::steady_clock::time_point started);
  void signal_tree(std::span<const pid_t> descendants, int sig) const;

  pid_t pid_ = -1;
  std::chrono::steady_clock::time_point started_;  // just before it was spawned
  bool own_group_ = false;
  int pidfd_ = -1;  // readable once the child has exited; -1 if unsupported
  std::optional<int> exit_code_;
};

// Waits at most `seconds` for a signal a SignalGuard handles (SIGINT,
// SIGTERM, SIGCHLD): how a supervisor without a child of its own sleeps.
void wait_for_guarded_signal(double seconds);

// Starts options.argv. Everything the child needs is prepared first, so the
// only failures left in the child are exec's own. Throws Error: 127/126 as
// above; kExitFailure when a stream file or the working directory cannot be
// opened (naming it) or the system refuses a new process.
ChildProcess spawn(const SpawnOptions& options);

// Runs `body` in a forked copy of this process, without exec: for work that
// must be a process of its own (pinned to a CPU, beside copies of itself)
// but needs nothing beyond this one's memory. The copy exits 0 when `body`
// returns and 1 when it throws; it never returns into the caller's code.
// Throws Error (kExitFailure) when the system refuses a new process.
ChildProcess fork_call(const std::function<void()>& body);

// What a SignalGuard does with SIGINT and SIGTERM.
enum class SignalPolicy {
  // Pass those sent by a process (kill(), a job scheduler; si_code SI_USER
  // or SI_QUEUE) on to the child named by forward_to(). The terminal's
  // reach the child's process group by themselves and are not sent twice.
  // One sent before forward_to() is held and forwarded then.
  kForwardToChild,
  // Record them (interrupted()); the caller stops its child.
  kRecordInterrupt,
};

// Handles SIGINT, SIGTERM and SIGCHLD (which only wakes supervise()) for its
// lifetime and restores the previous handlers when destroyed.
class SignalGuard {
 public:
  explicit SignalGuard(SignalPolicy policy);
  ~SignalGuard();
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

  // kForwardToChild: the child to forward to from now on.
  void forward_to(pid_t child);
  // kRecordInterrupt: whether SIGINT or SIGTERM has arrived, and which
  // came first (0 for none).
  bool interrupted() const;
  int interrupt_signal() const;

 private:
  struct sigaction old_int_ {
  }, old_term_{}, old_chld_{};
};

// Holds SIGINT, SIGTERM and SIGHUP for its lifetime: one that arrives is
// delivered, to the handler in place before, only when the scope ends. For
// work that must not be cut in half (a checkpoint save): Ctrl-C then stops
// the process right after it, not in the middle. Work that can be undone
// instead (a new output that is still a temporary) asks pending() between
// its steps, removes what it wrote and leaves the scope: the signal then
// takes effect. Any thread may receive the signal; one DeferredSignals at a
// time.
class DeferredSignals {
 public:
  DeferredSignals();
  ~DeferredSignals();
  DeferredSignals(const DeferredSignals&) = delete;
  DeferredSignals& operator=(const DeferredSignals&) = delete;

  // The first signal held so far, 0 for none.
  int pending() const;

 private:
  struct sigaction old_int_ {
  }, old_term_{}, old_hup_{};
};

}  // namespace trainscope

#endif  // TRAINSCOPE_BASE_PROCESS_H_
