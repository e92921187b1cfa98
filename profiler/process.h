// Child processes: find a program, start it, wait for it, stop it, and
// supervise it while a ProcessPoller watches its tree. The one place where
// trainscope spawns, reaps, kills and decodes exit statuses (the suite
// runner, the monitor and the gnuplot call use it), so the rules below hold
// everywhere:
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
//    its own, else to the child), a grace period, then SIGKILL to that group
//    and to every descendant the caller names (mpirun's children leave its
//    group), then reaping. The descendants get no SIGTERM of ours: a
//    launcher stops its own children, and only then cleans up after them
//    (mpirun's ranks killed under it leave their shared memory behind).
//
// Waiting does not sleep in slices: a ChildProcess holds a pidfd that
// becomes readable when the child exits (so wait_for() needs no process-wide
// handler and works from any thread), and a SignalGuard's handlers write to
// a self-pipe, so supervise() wakes at once on the child's exit, SIGCHLD,
// SIGINT and SIGTERM. Only without pidfds (Linux before 5.3) does wait_for()
// look again every 10 ms.
//
// Thread-safety: a ChildProcess belongs to one thread. At most one
// SignalGuard exists at a time in a process (its handlers are process-wide).
// spawn() and find_program() may be called from several threads (while no
// one changes the environment).
#ifndef TRAINSCOPE_PROFILER_PROCESS_H_
#define TRAINSCOPE_PROFILER_PROCESS_H_

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "profiler/process_poller.h"

namespace trainscope::profiler {

class SignalGuard;
struct SuperviseOptions;
struct SuperviseResult;

// How long kill_tree() lets a tree stop after SIGTERM before SIGKILL.
inline constexpr double kKillGraceSeconds = 3.0;

// A waitpid() status as a shell's exit code (see above).
int exit_code_from_wait_status(int wait_status);

// The path to run for `name` (see the rule above); a PATH hit is
// "entry/name", the current directory's "./name". Throws Error 127 ("command
// not found: NAME") or 126, naming `flag` (e.g. "--mpirun") when given.
std::string find_program(const std::string& name, const std::string& flag = "");

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is looked up with find_program()
  std::vector<std::string> env;   // NAME=VALUE, replacing inherited NAMEs
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

 private:
  friend ChildProcess spawn(const SpawnOptions& options);
  friend SuperviseResult supervise(ChildProcess* child, ProcessPoller& poller,
                                   const SignalGuard& signals, const SuperviseOptions& options);
  ChildProcess(pid_t pid, bool own_group, std::chrono::steady_clock::time_point started);
  void signal_tree(std::span<const pid_t> descendants, int sig) const;

  pid_t pid_ = -1;
  std::chrono::steady_clock::time_point started_;  // just before it was spawned
  bool own_group_ = false;
  int pidfd_ = -1;  // readable once the child has exited; -1 if unsupported
  std::optional<int> exit_code_;
};

// Starts options.argv. Everything the child needs is prepared first, so the
// only failures left in the child are exec's own. Throws Error: 127/126 as
// above; kExitFailure when a stream file or the working directory cannot be
// opened (naming it) or the system refuses a new process.
ChildProcess spawn(const SpawnOptions& options);

// What run_to_completion() saw.
struct CompletedRun {
  int exit_code = 0;
  bool timed_out = false;    // killed (with its tree) after the timeout
  bool interrupted = false;  // killed (with its tree) on the guard's SIGINT/SIGTERM
  std::string out, err;    // everything the child wrote to stdout and stderr
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
  struct sigaction old_int_ {}, old_term_ {}, old_chld_ {};
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
  struct sigaction old_int_ {}, old_term_ {}, old_hup_ {};
};

struct SuperviseOptions {
  double poll_interval_seconds = 0.25;
  std::optional<double> timeout_seconds;  // then kill the tree: timed_out
  // After every poll, with the seconds since supervise() began. Returning
  // false ends supervision (e.g. the followed process is gone).
  std::function<bool(const ProcessPoller& poller, double elapsed_seconds)> on_poll;
  // The tree is an MPI job: when a timeout or an interrupt kills it, what
  // Open MPI had no time to clean up is removed (noted from the processes
  // just before the kill; profiler/mpi_leftovers.h).
  bool remove_mpi_leftovers = false;
};

struct SuperviseResult {
  int exit_code = 0;  // the child's (0 without a child)
  bool timed_out = false;
  bool interrupted = false;  // by the guard's SIGINT/SIGTERM
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

#endif  // TRAINSCOPE_PROFILER_PROCESS_H_
