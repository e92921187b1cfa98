// base/process.h: exit codes, the PATH rule, spawning, waiting, killing
// a tree, the signal guard's two policies and the supervise loop.
#include "profiler/supervise.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "base/check.h"
#include "tests/scoped_env.h"
#include "tests/temp_dir.h"

namespace trainscope::profiler {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

using testing::ScopedEnv;

class ScopedCwd {
 public:
  explicit ScopedCwd(const fs::path& dir) : old_(fs::current_path()) { fs::current_path(dir); }
  ~ScopedCwd() { fs::current_path(old_); }

 private:
  fs::path old_;
};

void write_file(const fs::path& path, const std::string& text, fs::perms perms) {
  std::ofstream(path) << text;
  fs::permissions(path, perms);
}
constexpr fs::perms kExecutable = fs::perms::owner_all | fs::perms::group_read;
constexpr fs::perms kReadOnly = fs::perms::owner_read | fs::perms::owner_write;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The exit code of find_program(name, flag), or 0 when it finds something.
int lookup_error(const std::string& name, const std::string& flag = "",
                 std::string* message = nullptr) {
  try {
    find_program(name, flag);
    return 0;
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.exit_code();
  }
}

ChildProcess spawn_argv(std::vector<std::string> argv, bool own_process_group = false) {
  SpawnOptions options;
  options.argv = std::move(argv);
  options.own_process_group = own_process_group;
  return spawn(options);
}

// Whether `pid` has gone (or is a zombie no one has reaped yet).
bool has_ended(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return true;
  const auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

bool ends_within(pid_t pid, double seconds) {
  const auto start = Clock::now();
  while (!has_ended(pid)) {
    if (seconds_since(start) > seconds) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// ---- Exit status ----

TEST(ExitStatusTest, ExitCodesAndSignalsAsAShellReportsThem) {
  EXPECT_EQ(spawn_argv({"sh", "-c", "exit 3"}).wait(), 3);
  EXPECT_EQ(spawn_argv({"sh", "-c", "kill -KILL $$"}).wait(), 128 + SIGKILL);
  EXPECT_EQ(spawn_argv({"true"}).wait(), 0);
}

TEST(ExitStatusTest, AStatusThatIsNeitherIsAFailure) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::raise(SIGSTOP);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, WUNTRACED), child);
  ASSERT_TRUE(WIFSTOPPED(status));
  EXPECT_EQ(exit_code_from_wait_status(status), kExitFailure);
  ::kill(child, SIGKILL);
  ::waitpid(child, &status, 0);
  EXPECT_EQ(exit_code_from_wait_status(status), 128 + SIGKILL);
}

// A forked copy runs the body, not the caller's code after it, and says
// how the body ended in its exit code.
TEST(ForkCallTest, TheCopyRunsTheBodyAndExitsZeroOrOneWhenItThrows) {
  const testing::TempDir dir("fork-call");
  const fs::path mark = dir / "mark";
  ChildProcess wrote = fork_call([&] { std::ofstream(mark) << "copy"; });
  EXPECT_EQ(wrote.wait(), 0);
  std::string text;
  std::ifstream(mark) >> text;
  EXPECT_EQ(text, "copy");
  EXPECT_EQ(fork_call([] { throw Error("no"); }).wait(), 1);
}

// ---- Finding programs ----

class FindProgramTest : public ::testing::Test {
 protected:
  FindProgramTest() : dir_("find-program") {
    fs::create_directories(dir_ / "bin");
    write_file(dir_ / "bin" / "prog", "#!/bin/sh\n", kExecutable);
  }
  testing::TempDir dir_;
};

TEST_F(FindProgramTest, SearchesPathInOrder) {
  fs::create_directories(dir_ / "first");
  write_file(dir_ / "first" / "prog", "#!/bin/sh\n", kExecutable);
  const ScopedEnv path("PATH", (dir_ / "first").string() + ":" + (dir_ / "bin").string());
  EXPECT_EQ(find_program("prog"), (dir_ / "first" / "prog").string());
}

TEST_F(FindProgramTest, AnEmptyEntryIsTheCurrentDirectory) {
  const ScopedCwd cwd(dir_ / "bin");
  for (const std::string value : {"/nonexistent:", ":/nonexistent", "/nonexistent::/usr/bin", ""}) {
    const ScopedEnv path("PATH", value);
    EXPECT_EQ(find_program("prog"), "./prog") << "PATH=" << value;
  }
  const ScopedEnv path("PATH", "/nonexistent");
  EXPECT_EQ(lookup_error("prog"), 127);
}

TEST_F(FindProgramTest, EntriesThatCannotBeReadAreSkipped) {
  // A symlink loop (ELOOP) and a name too long for the system (ENAMETOOLONG)
  // fail for root too; std::filesystem's throwing calls would throw on them.
  fs::create_symlink(dir_ / "loop", dir_ / "loop");
  const std::string too_long = "/" + std::string(5000, 'x');
  fs::create_directories(dir_ / "locked");
  fs::permissions(dir_ / "locked", fs::perms::none);  // unreadable unless we are root
  const ScopedEnv path("PATH", (dir_ / "loop").string() + ":" + too_long + ":" +
                                   (dir_ / "locked").string() + ":" + (dir_ / "bin").string());
  EXPECT_EQ(find_program("prog"), (dir_ / "bin" / "prog").string());
  EXPECT_EQ(lookup_error("absent"), 127);
  fs::permissions(dir_ / "locked", fs::perms::owner_all);
}

TEST_F(FindProgramTest, FoundButNotExecutableIs126UnlessALaterEntryHasIt) {
  fs::create_directories(dir_ / "plain");
  write_file(dir_ / "plain" / "prog", "#!/bin/sh\n", kReadOnly);
  write_file(dir_ / "plain" / "only-plain", "#!/bin/sh\n", kReadOnly);
  const ScopedEnv path("PATH", (dir_ / "plain").string() + ":" + (dir_ / "bin").string());
  EXPECT_EQ(find_program("prog"), (dir_ / "bin" / "prog").string());
  std::string message;
  EXPECT_EQ(lookup_error("only-plain", "", &message), 126);
  EXPECT_NE(message.find("only-plain"), std::string::npos) << message;
}

TEST_F(FindProgramTest, MissingIs127AndNamesTheFlag) {
  const ScopedEnv path("PATH", (dir_ / "bin").string());
  std::string message;
  EXPECT_EQ(lookup_error("no-such-mpirun", "--mpirun", &message), 127);
  EXPECT_EQ(message, "--mpirun: command not found: no-such-mpirun");
  EXPECT_EQ(lookup_error("no-such-mpirun", "", &message), 127);
  EXPECT_EQ(message, "command not found: no-such-mpirun");
  EXPECT_EQ(lookup_error(""), 127);
}

TEST_F(FindProgramTest, ANameWithASlashIsAPathNotSearched) {
  const ScopedEnv path("PATH", dir_.path().string());  // holds bin/prog
  const ScopedCwd cwd(dir_.path());
  EXPECT_EQ(find_program("bin/prog"), "bin/prog");  // from here
  EXPECT_EQ(find_program((dir_ / "bin" / "prog").string()), (dir_ / "bin" / "prog").string());
  const ScopedCwd elsewhere(dir_ / "bin");
  EXPECT_EQ(lookup_error("bin/prog"), 127);  // not from PATH's dir_
  EXPECT_EQ(lookup_error("/nonexistent/prog"), 127);
  EXPECT_EQ(lookup_error(dir_.path().string() + "/bin"), 126);  // a directory
}

TEST(FindProgramDefaultsTest, UnsetPathMeansUsrBinAndBin) {
  const ScopedEnv path("PATH", std::nullopt);
  EXPECT_EQ(find_program("sh"), "/usr/bin/sh");
}

// ---- Spawning ----

TEST(SpawnTest, EnvironmentOverridesWorkingDirectoryAndRedirections) {
  testing::TempDir dir("spawn");
  fs::create_directories(dir / "work");
  const ScopedEnv inherited("TS_SPAWN_TEST_KEPT", "kept");
  SpawnOptions options;
  options.argv = {"sh", "-c",
                  "echo \"$TS_SPAWN_TEST_KEPT $HOME $TS_SPAWN_TEST_NEW\"; pwd; cat; "
                  "echo to-stderr >&2"};
  options.env = {"HOME=/overridden", "TS_SPAWN_TEST_NEW=new"};
  options.working_dir = dir / "work";
  options.stdin_file = "/dev/null";
  options.stdout_file = dir / "out.txt";
  options.stderr_file = dir / "err.txt";
  EXPECT_EQ(spawn(options).wait(), 0);
  EXPECT_EQ(read_text(dir / "out.txt"),
            "kept /overridden new\n" + fs::canonical(dir / "work").string() + "\n");
  EXPECT_EQ(read_text(dir / "err.txt"), "to-stderr\n");
}

TEST(SpawnTest, ARelativeProgramIsFoundFromHereNotFromTheWorkingDirectory) {
  testing::TempDir dir("spawn");
  fs::create_directories(dir / "work");
  write_file(dir / "prog", "#!/bin/sh\npwd\n", kExecutable);
  const ScopedCwd cwd(dir.path());
  SpawnOptions options;
  options.argv = {"./prog"};
  options.working_dir = "work";
  options.stdout_file = dir / "out.txt";
  EXPECT_EQ(spawn(options).wait(), 0);
  EXPECT_EQ(read_text(dir / "out.txt"), fs::canonical(dir / "work").string() + "\n");
}

TEST(SpawnTest, ExecFailureIsAnErrorNotAChildExiting127) {
  testing::TempDir dir("spawn");
  write_file(dir / "garbage",
             "\x7f"
             "ELF but not really",
             kExecutable);
  write_file(dir / "bad-interpreter", "#!/nonexistent/interpreter\n", kExecutable);
  const auto exit_code_of_spawning = [](const fs::path& program) {
    try {
      spawn_argv({program.string()});
      return 0;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(program.string()), std::string::npos) << e.what();
      return e.exit_code();
    }
  };
  EXPECT_EQ(exit_code_of_spawning(dir / "garbage"), 126);
  EXPECT_EQ(exit_code_of_spawning(dir / "bad-interpreter"), 127);
  EXPECT_EQ(exit_code_of_spawning("trainscope-no-such-program"), 127);
}

TEST(SpawnTest, AStreamFileThatCannotBeOpenedIsNamed) {
  SpawnOptions options;
  options.argv = {"true"};
  options.stdout_file = "/nonexistent/dir/out.txt";
  try {
    spawn(options);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), kExitFailure);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/out.txt"), std::string::npos);
  }
}

TEST(SpawnTest, OwnProcessGroupOnlyWhenAsked) {
  ChildProcess grouped = spawn_argv({"sleep", "5"}, /*own_process_group=*/true);
  ChildProcess plain = spawn_argv({"sleep", "5"});
  EXPECT_EQ(::getpgid(grouped.pid()), grouped.pid());
  EXPECT_EQ(::getpgid(plain.pid()), ::getpgrp());
  EXPECT_EQ(grouped.kill_tree({}), 128 + SIGTERM);
  EXPECT_EQ(plain.kill_tree({}), 128 + SIGTERM);
}

// ---- Waiting and killing ----

TEST(ChildProcessTest, WaitForReturnsNothingWhileTheChildRuns) {
  ChildProcess child = spawn_argv({"sleep", "5"}, true);
  const auto start = Clock::now();
  EXPECT_FALSE(child.wait_for(0.3).has_value());
  EXPECT_GE(seconds_since(start), 0.3);
  EXPECT_FALSE(child.try_wait().has_value());
  EXPECT_EQ(child.kill_tree({}), 128 + SIGTERM);
  EXPECT_EQ(child.try_wait(), 128 + SIGTERM);  // reaped once, remembered
}

TEST(ChildProcessTest, WaitForWakesWhenTheChildExits) {
  ChildProcess child = spawn_argv({"sh", "-c", "sleep 0.2; exit 4"});
  const auto start = Clock::now();
  EXPECT_EQ(child.wait_for(30), 4);
  EXPECT_LT(seconds_since(start), 2.0);
}

TEST(ChildProcessTest, KillTreeReachesAGrandchildThatLeftTheGroup) {
  testing::TempDir dir("kill-tree");
  const fs::path pid_file = dir / "grandchild.pid";
  ChildProcess child =
      spawn_argv({"sh", "-c",
                  "setsid sh -c 'echo $$ > " + pid_file.string() + ".tmp; mv " + pid_file.string() +
                      ".tmp " + pid_file.string() + "; exec sleep 100' & sleep 100"},
                 true);
  const auto start = Clock::now();
  while (!fs::exists(pid_file) && seconds_since(start) < 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const pid_t grandchild = std::stoi(read_text(pid_file));
  ASSERT_NE(::getpgid(grandchild), child.pid()) << "the grandchild should have left the group";
  const pid_t descendants[] = {grandchild};
  EXPECT_EQ(child.kill_tree(descendants, 1.0), 128 + SIGTERM);
  EXPECT_TRUE(ends_within(grandchild, 5.0));
  if (!has_ended(grandchild)) ::kill(grandchild, SIGKILL);
}

TEST(ChildProcessTest, KillTreeUsesSigkillAfterTheGrace) {
  testing::TempDir dir("kill-tree");
  const fs::path ready = dir / "ready";
  ChildProcess child =
      spawn_argv({"sh", "-c", "trap '' TERM; touch " + ready.string() + "; sleep 5 & wait"}, true);
  for (const auto start = Clock::now(); !fs::exists(ready) && seconds_since(start) < 10;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto start = Clock::now();
  EXPECT_EQ(child.kill_tree({}, 0.3), 128 + SIGKILL);
  EXPECT_LT(seconds_since(start), 3.0);
}

TEST(ChildProcessTest, DestroyingARunningChildKillsAndReapsIt) {
  pid_t pid = 0;
  {
    ChildProcess child = spawn_argv({"sleep", "5"}, true);
    pid = child.pid();
  }
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, WNOHANG), -1);  // already reaped
  EXPECT_EQ(errno, ECHILD);
}

// ---- Signal guard ----

volatile sig_atomic_t g_test_handler_calls = 0;
void count_call(int) { g_test_handler_calls = g_test_handler_calls + 1; }

// The handler installed for `sig` now.
using Handler = void (*)(int);
Handler current_handler(int sig) {
  struct sigaction now {};
  ::sigaction(sig, nullptr, &now);
  return now.sa_handler;
}

TEST(SignalGuardTest, RecordsSigintSentWithKillAndRestoresTheOldHandler) {
  struct sigaction mine {
  }, previous{};
  mine.sa_handler = count_call;
  sigemptyset(&mine.sa_mask);
  ::sigaction(SIGINT, &mine, &previous);
  g_test_handler_calls = 0;
  {
    SignalGuard guard(SignalPolicy::kRecordInterrupt);
    EXPECT_FALSE(guard.interrupted());
    ::kill(::getpid(), SIGINT);
    const auto start = Clock::now();
    while (!guard.interrupted() && seconds_since(start) < 5) std::this_thread::yield();
    EXPECT_TRUE(guard.interrupted());
    EXPECT_EQ(g_test_handler_calls, 0);
  }
  EXPECT_EQ(current_handler(SIGINT), &count_call);
  EXPECT_EQ(current_handler(SIGCHLD), SIG_DFL);
  ::kill(::getpid(), SIGINT);
  EXPECT_EQ(g_test_handler_calls, 1);
  ::sigaction(SIGINT, &previous, nullptr);
}

TEST(SignalGuardTest, ForwardsSigtermSentWithKillToTheChild) {
  SignalGuard guard(SignalPolicy::kForwardToChild);
  ChildProcess child = spawn_argv({"sleep", "5"});
  guard.forward_to(child.pid());
  ::kill(::getpid(), SIGTERM);
  EXPECT_EQ(child.wait_for(3), 128 + SIGTERM);
  EXPECT_FALSE(guard.interrupted());  // forwarded, not recorded
}

TEST(SignalGuardTest, ASignalBeforeTheChildIsKnownIsForwardedThen) {
  SignalGuard guard(SignalPolicy::kForwardToChild);
  ::kill(::getpid(), SIGINT);
  ChildProcess child = spawn_argv({"sleep", "5"});
  guard.forward_to(child.pid());
  EXPECT_EQ(child.wait_for(3), 128 + SIGINT);
}

// ---- Supervise ----

struct SuperviseFixture {
  explicit SuperviseFixture(std::vector<std::string> argv)
      : child(spawn_argv(std::move(argv), true)), poller(child.pid()) {}
  ChildProcess child;
  ProcessPoller poller;
};

TEST(SuperviseTest, EndsWhenTheChildExitsWithoutWaitingForThePoll) {
  SignalGuard guard(SignalPolicy::kRecordInterrupt);
  SuperviseFixture f({"sh", "-c", "sleep 0.3; exit 5"});
  int polls = 0;
  SuperviseOptions options;
  options.poll_interval_seconds = 30;  // the child's exit must wake it
  options.on_poll = [&](const ProcessPoller& poller, double) {
    ++polls;
    EXPECT_FALSE(poller.last_poll().empty());
    return true;
  };
  const SuperviseResult r = supervise(&f.child, f.poller, guard, options);
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(polls, 1);
  EXPECT_GE(r.runtime_seconds, 0.3);
  EXPECT_LT(r.runtime_seconds, 3.0);
}

TEST(SuperviseTest, KillsTheTreeAtTheTimeout) {
  SignalGuard guard(SignalPolicy::kRecordInterrupt);
  SuperviseFixture f({"sh", "-c", "sleep 30 & sleep 30"});
  int polls = 0;
  SuperviseOptions options;
  options.poll_interval_seconds = 0.05;
  options.timeout_seconds = 0.5;
  options.on_poll = [&](const ProcessPoller&, double) { return ++polls > 0; };
  const SuperviseResult r = supervise(&f.child, f.poller, guard, options);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM);
  EXPECT_GE(r.runtime_seconds, 0.5);
  EXPECT_LT(r.runtime_seconds, 3.0);
  EXPECT_GE(polls, 5);
  for (const ProcessSample& s : f.poller.last_poll()) EXPECT_TRUE(ends_within(s.pid, 5.0)) << s.pid;
}

TEST(RunToCompletionTest, CapturesBothStreamsAndTheExitCode) {
  SpawnOptions options;
  options.argv = {"sh", "-c", "echo out; echo err >&2; exit 3"};
  const CompletedRun r = run_to_completion(options, 10.0);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST(RunToCompletionTest, KillsTheTreeAtTheTimeout) {
  SpawnOptions options;
  options.argv = {"sh", "-c", "echo started; sleep 30 & sleep 30"};
  options.own_process_group = true;
  const auto start = Clock::now();
  const CompletedRun r = run_to_completion(options, 0.3);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM);
  EXPECT_EQ(r.out, "started\n");
  EXPECT_LT(seconds_since(start), 5.0);
}

TEST(SuperviseTest, AnInterruptStopsTheChild) {
  SignalGuard guard(SignalPolicy::kRecordInterrupt);
  SuperviseFixture f({"sleep", "30"});
  std::thread interrupter([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::kill(::getpid(), SIGINT);
  });
  SuperviseOptions options;
  options.poll_interval_seconds = 10;  // the signal must wake it
  const SuperviseResult r = supervise(&f.child, f.poller, guard, options);
  interrupter.join();
  EXPECT_TRUE(r.interrupted);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM);
  EXPECT_LT(r.runtime_seconds, 3.0);
}

TEST(SuperviseTest, WithoutAChildOnPollDecidesTheEnd) {
  SignalGuard guard(SignalPolicy::kRecordInterrupt);
  ProcessPoller poller(::getpid());
  int polls = 0;
  SuperviseOptions options;
  options.poll_interval_seconds = 0.01;
  options.on_poll = [&](const ProcessPoller&, double) { return ++polls < 3; };
  const SuperviseResult r = supervise(nullptr, poller, guard, options);
  EXPECT_EQ(polls, 3);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.interrupted || r.timed_out);
}

// Item 7: a signal during a checkpoint save waits for the save: the work in
// the scope completes, then the process ends by that signal.
TEST(DeferredSignalsTest, ASignalTakesEffectWhenTheScopeEnds) {
  testing::TempDir dir("deferred");
  const fs::path done = dir / "done";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    {
      DeferredSignals hold;
      ::raise(SIGTERM);
      ::usleep(50'000);  // the rest of the save
      std::ofstream(done) << "whole";
    }
    ::_exit(0);  // not reached: SIGTERM is delivered as the scope ends
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(fs::exists(done)) << "the signal cut the work short";
  ASSERT_TRUE(WIFSIGNALED(status)) << "the held signal was dropped";
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

}  // namespace
}  // namespace trainscope::profiler
