#include "base/process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/check.h"

extern char** environ;

namespace trainscope {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

namespace fs = std::filesystem;

// A descriptor that becomes readable when `pid` exits, or -1 (kernels before
// 5.3). The syscall itself: glibc 2.36's <sys/pidfd.h> lacks extern "C".
int open_pidfd(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// poll()'s timeout for `seconds`, rounded up so that waking early cannot spin.
int poll_timeout_ms(double seconds) {
  if (!(seconds > 0)) return 0;
  return static_cast<int>(std::min(std::ceil(seconds * 1000), static_cast<double>(INT_MAX)));
}

// Waits until one of the descriptors (-1: none) is readable or `seconds`
// pass; a signal ends the wait early (EINTR), which callers treat as a wake-up.
void wait_readable(int fd_a, int fd_b, double seconds) {
  pollfd fds[2] = {{fd_a, POLLIN, 0}, {fd_b, POLLIN, 0}};  // poll ignores fd -1
  if (fd_a < 0 && fd_b < 0) {
    // No pidfd and no guard: the only way left is to look again shortly.
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(seconds, 0.01)));
    return;
  }
  ::poll(fds, 2, poll_timeout_ms(seconds));
}

// ---- Finding programs ----

enum class Probe { kMissing, kNotExecutable, kExecutable };

// Unreadable (EACCES, ELOOP...) counts as missing: the search goes on.
Probe probe(const fs::path& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return Probe::kMissing;
  if (fs::is_regular_file(status) && ::access(path.c_str(), X_OK) == 0) return Probe::kExecutable;
  return Probe::kNotExecutable;
}

[[noreturn]] void throw_not_runnable(Probe probe, const std::string& name,
                                     const std::string& flag) {
  const std::string prefix = flag.empty() ? "" : flag + ": ";
  if (probe == Probe::kNotExecutable)
    throw Error(fmt::format("{}cannot execute {}: not an executable file", prefix, name), 126);
  throw Error(fmt::format("{}command not found: {}", prefix, name), 127);
}

// ---- Spawning ----

class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(ScopedFd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

// Opens a file for the child in the parent, where a failure can name it.
ScopedFd open_for_child(const fs::path& path, int flags, const char* what) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw Error(fmt::format("cannot open {} for the child's {}: {}", path.string(), what,
                            std::strerror(errno)),
                kExitFailure);
  }
  return ScopedFd(fd);
}

// The inherited environment with `overrides` (NAME=VALUE) replacing or
// adding entries.
std::vector<std::string> child_environment(const std::vector<std::string>& overrides) {
  std::set<std::string> overridden;
  for (const std::string& e : overrides) overridden.insert(e.substr(0, e.find('=')));
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    if (!overridden.count(entry.substr(0, entry.find('=')))) env.push_back(std::move(entry));
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

// posix_spawn's two option objects, destroyed on every way out.
struct SpawnSetup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  SpawnSetup() {
    TS_CHECK(posix_spawn_file_actions_init(&actions) == 0);
    TS_CHECK(posix_spawnattr_init(&attributes) == 0);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

// Default SIGINT/SIGTERM and no blocked signal in the child, whatever we
// ignore or block; its own process group if asked.
void set_child_attributes(posix_spawnattr_t* attributes, bool own_process_group) {
  sigset_t defaults, none;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  sigemptyset(&none);
  short flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
  if (own_process_group) flags |= POSIX_SPAWN_SETPGROUP;
  TS_CHECK(posix_spawnattr_setsigdefault(attributes, &defaults) == 0);
  TS_CHECK(posix_spawnattr_setsigmask(attributes, &none) == 0);
  TS_CHECK(posix_spawnattr_setpgroup(attributes, 0) == 0);  // 0: a group named after the child
  TS_CHECK(posix_spawnattr_setflags(attributes, flags) == 0);
}

// posix_spawn's error: exec's errno, or fork's (EAGAIN, ENOMEM).
[[noreturn]] void throw_spawn_error(int err, const std::string& name) {
  const std::string reason = std::strerror(err);
  if (err == EAGAIN || err == ENOMEM)
    throw Error(fmt::format("cannot start {}: {}", name, reason), kExitFailure);
  // After find_program, ENOENT means the interpreter (#! line or ELF loader)
  // is missing: "not found" all the same, as a shell reports it.
  throw Error(fmt::format("cannot execute {}: {}", name, reason), err == ENOENT ? 127 : 126);
}

// ---- Signals ----

// What the handlers read and write. Global because handlers are; lock-free
// atomics and write() are all a handler may touch.
static_assert(std::atomic<int>::is_always_lock_free, "the signal handlers need lock-free atomics");
std::atomic<bool> g_guard_active{false};
std::atomic<int> g_policy{0};            // a SignalPolicy
std::atomic<int> g_interrupt_signal{0};  // kRecordInterrupt: the first one, 0 for none
std::atomic<int> g_forward_pid{0};       // kForwardToChild
std::atomic<int> g_pending_signal{0};    // kForwardToChild, before forward_to()
int g_wake_pipe[2] = {-1, -1};

void wake() {
  const char byte = 1;
  [[maybe_unused]] ssize_t n = ::write(g_wake_pipe[1], &byte, 1);
}

void drain_wakeups() {
  char buf[64];
  while (::read(g_wake_pipe[0], buf, sizeof(buf)) > 0) {}
}

void forward_signal(int sig) {
  const pid_t child = g_forward_pid.load();
  if (child > 0) {
    ::kill(child, sig);
    return;
  }
  g_pending_signal.store(sig);
  // forward_to() may have run since the load: then one of us delivers it.
  const pid_t now_known = g_forward_pid.load();
  if (now_known > 0) {
    if (const int pending = g_pending_signal.exchange(0); pending != 0) ::kill(now_known, pending);
  }
}

void on_terminate(int sig, siginfo_t* info, void*) {
  const int saved_errno = errno;
  if (g_policy.load() == static_cast<int>(SignalPolicy::kRecordInterrupt)) {
    int none = 0;
    g_interrupt_signal.compare_exchange_strong(none, sig);
  } else if (info->si_code == SI_USER || info->si_code == SI_QUEUE) {
    forward_signal(sig);
  }
  wake();
  errno = saved_errno;
}

void on_sigchld(int) {
  const int saved_errno = errno;
  wake();
  errno = saved_errno;
}

}  // namespace

int exit_code_from_wait_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return kExitFailure;
}

std::string find_program(const std::string& name, const std::string& flag) {
  if (name.find('/') != std::string::npos) {
    const Probe found = probe(name);
    if (found != Probe::kExecutable) throw_not_runnable(found, name, flag);
    return name;
  }
  Probe best = Probe::kMissing;
  if (!name.empty()) {
    const char* path = std::getenv("PATH");
    std::string_view entries = path != nullptr ? path : "/usr/bin:/bin";
    for (;;) {
      const std::size_t colon = entries.find(':');
      const std::string_view entry = entries.substr(0, colon);
      const fs::path candidate = fs::path(entry.empty() ? "." : entry) / name;
      const Probe found = probe(candidate);
      if (found == Probe::kExecutable) return candidate.string();
      best = std::max(best, found);
      if (colon == std::string_view::npos) break;
      entries.remove_prefix(colon + 1);
    }
  }
  throw_not_runnable(best, name, flag);
}

ChildProcess spawn(const SpawnOptions& options) {
  TS_CHECK(!options.argv.empty()) << "spawn needs a program";
  std::string program = find_program(options.argv[0]);
  SpawnSetup setup;
  // Held open until posix_spawn returns; the child gets copies.
  ScopedFd in, out, err, dir;
  if (!options.working_dir.empty()) {
    program = fs::absolute(program).string();  // it names a file from here, not from there
    dir = ScopedFd(::open(options.working_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir.get() < 0) {
      throw Error(fmt::format("cannot use {} as the working directory of {}: {}",
                              options.working_dir.string(), options.argv[0], std::strerror(errno)),
                  kExitFailure);
    }
    posix_spawn_file_actions_addfchdir_np(&setup.actions, dir.get());
  }
  const struct {
    const fs::path& path;
    ScopedFd& fd;
    int target, flags;
    const char* what;
  } streams[] = {{options.stdin_file, in, STDIN_FILENO, O_RDONLY, "stdin"},
                 {options.stdout_file, out, STDOUT_FILENO, O_WRONLY | O_CREAT | O_TRUNC, "stdout"},
                 {options.stderr_file, err, STDERR_FILENO, O_WRONLY | O_CREAT | O_TRUNC, "stderr"}};
  for (const auto& s : streams) {
    if (s.path.empty()) continue;
    s.fd = open_for_child(s.path, s.flags, s.what);
    posix_spawn_file_actions_adddup2(&setup.actions, s.fd.get(), s.target);
  }
  set_child_attributes(&setup.attributes, options.own_process_group);

  std::vector<std::string> args = options.argv;
  std::vector<std::string> env = child_environment(options.env);
  const std::vector<char*> argv = pointers_to(args), envp = pointers_to(env);
  std::fflush(nullptr);  // what we printed before comes before what the child prints
  const auto started = Clock::now();
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, program.c_str(), &setup.actions, &setup.attributes,
                               argv.data(), envp.data());
  if (rc != 0) throw_spawn_error(rc, options.argv[0]);
  return ChildProcess(pid, options.own_process_group, started);
}

ChildProcess fork_call(const std::function<void()>& body) {
  std::fflush(nullptr);  // nothing buffered is written twice
  const auto started = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    throw Error(fmt::format("cannot start a process: fork failed: {}", std::strerror(errno)),
                kExitFailure);
  }
  if (pid == 0) {
    try {
      body();
    } catch (...) {
      ::_exit(1);
    }
    ::_exit(0);
  }
  return ChildProcess(pid, false, started);
}

ChildProcess::ChildProcess(pid_t pid, bool own_group, Clock::time_point started)
    : pid_(pid), started_(started), own_group_(own_group), pidfd_(open_pidfd(pid)) {}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_),
      started_(other.started_),
      own_group_(other.own_group_),
      pidfd_(other.pidfd_),
      exit_code_(other.exit_code_) {
  other.pid_ = -1;
  other.pidfd_ = -1;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exit_code_) {
    signal_tree({}, SIGKILL);
    wait();
  }
  if (pidfd_ >= 0) ::close(pidfd_);
}

std::optional<int> ChildProcess::try_wait() {
  if (exit_code_ || pid_ <= 0) return exit_code_;
  int status = 0;
  const pid_t reaped = ::waitpid(pid_, &status, WNOHANG);
  if (reaped == pid_) {
    exit_code_ = exit_code_from_wait_status(status);
  } else if (reaped < 0 && errno == ECHILD) {
    exit_code_ = kExitFailure;  // reaped elsewhere (SIGCHLD ignored): status lost
  }
  return exit_code_;
}

std::optional<int> ChildProcess::wait_for(double timeout_seconds) {
  const auto start = Clock::now();
  for (;;) {
    if (try_wait()) return exit_code_;
    const double left = timeout_seconds - seconds_since(start);
    if (left <= 0) return std::nullopt;
    wait_readable(pidfd_, -1, left);
  }
}

int ChildProcess::wait() {
  while (!exit_code_ && pid_ > 0) {
    int status = 0;
    const pid_t reaped = ::waitpid(pid_, &status, 0);
    if (reaped == pid_)
      exit_code_ = exit_code_from_wait_status(status);
    else if (reaped < 0 && errno != EINTR)
      exit_code_ = kExitFailure;
  }
  return exit_code_.value_or(kExitFailure);
}

void ChildProcess::signal_tree(std::span<const pid_t> descendants, int sig) const {
  // A reaped child's pid may be reused; its group lives on while members do.
  if (own_group_)
    ::kill(-pid_, sig);
  else if (!exit_code_)
    ::kill(pid_, sig);
  for (const pid_t p : descendants) {
    if (p > 1 && p != ::getpid()) ::kill(p, sig);
  }
}

int ChildProcess::kill_tree(std::span<const pid_t> descendants, double grace_seconds) {
  // The group only: mpirun stops its ranks and then removes their segments
  // and its session directory, which it cannot do for ranks killed under it.
  signal_tree({}, SIGTERM);
  wait_for(grace_seconds);
  // Also when the child went quickly: descendants that left its group, or
  // ignored SIGTERM, would outlive it.
  signal_tree(descendants, SIGKILL);
  return wait();
}

namespace {
// The first signal DeferredSignals held, 0 for none.
std::atomic<int> g_deferred_signal{0};
void on_deferred(int sig) {
  int none = 0;
  g_deferred_signal.compare_exchange_strong(none, sig);
}
}  // namespace

DeferredSignals::DeferredSignals() {
  g_deferred_signal = 0;
  struct sigaction hold {};
  hold.sa_handler = on_deferred;
  hold.sa_flags = SA_RESTART;
  sigemptyset(&hold.sa_mask);
  ::sigaction(SIGINT, &hold, &old_int_);
  ::sigaction(SIGTERM, &hold, &old_term_);
  ::sigaction(SIGHUP, &hold, &old_hup_);
}

DeferredSignals::~DeferredSignals() {
  ::sigaction(SIGINT, &old_int_, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
  ::sigaction(SIGHUP, &old_hup_, nullptr);
  if (const int sig = g_deferred_signal.exchange(0); sig != 0) ::raise(sig);
}

int DeferredSignals::pending() const { return g_deferred_signal.load(); }

SignalGuard::SignalGuard(SignalPolicy policy) {
  TS_CHECK(!g_guard_active.exchange(true)) << "one SignalGuard at a time";
  TS_CHECK(::pipe2(g_wake_pipe, O_CLOEXEC | O_NONBLOCK) == 0) << std::strerror(errno);
  g_policy = static_cast<int>(policy);
  g_interrupt_signal = 0;
  g_forward_pid = 0;
  g_pending_signal = 0;
  struct sigaction terminate {};
  terminate.sa_sigaction = on_terminate;
  terminate.sa_flags = SA_RESTART | SA_SIGINFO;
  sigemptyset(&terminate.sa_mask);
  struct sigaction child {};
  child.sa_handler = on_sigchld;
  child.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigemptyset(&child.sa_mask);
  ::sigaction(SIGINT, &terminate, &old_int_);
  ::sigaction(SIGTERM, &terminate, &old_term_);
  ::sigaction(SIGCHLD, &child, &old_chld_);
}

SignalGuard::~SignalGuard() {
  ::sigaction(SIGINT, &old_int_, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
  ::sigaction(SIGCHLD, &old_chld_, nullptr);
  g_forward_pid = 0;
  ::close(g_wake_pipe[0]);
  ::close(g_wake_pipe[1]);
  g_wake_pipe[0] = g_wake_pipe[1] = -1;
  g_guard_active = false;
}

void SignalGuard::forward_to(pid_t child) {
  g_forward_pid.store(child);
  if (const int pending = g_pending_signal.exchange(0); pending != 0) ::kill(child, pending);
}

bool SignalGuard::interrupted() const { return g_interrupt_signal.load() != 0; }

int SignalGuard::interrupt_signal() const { return g_interrupt_signal.load(); }

void wait_for_guarded_signal(double seconds) {
  wait_readable(-1, g_wake_pipe[0], seconds);
  drain_wakeups();
}

void ChildProcess::wait_for_exit_or_signal(double seconds) const {
  wait_readable(pidfd_, g_wake_pipe[0], seconds);
  drain_wakeups();
}

}  // namespace trainscope
