#include "suites/runner.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "kernels/check.h"
#include "profiler/process_poller.h"
#include "results/environment.h"
#include "results/results_db.h"

#ifndef TRAINSCOPE_GIT_REVISION
#define TRAINSCOPE_GIT_REVISION "unknown"
#endif

extern char** environ;

namespace trainscope::suites {
namespace {

using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }

// Installs the interrupt handlers for the lifetime of a suite run.
class SignalGuard {
 public:
  SignalGuard() {
    g_interrupted = 0;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~SignalGuard() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

std::string fmt_number(double v, const char* spec) {
  return v < 0 || !std::isfinite(v) ? std::string("-") : fmt::format(fmt::runtime(spec), v);
}

std::string fmt_duration(double s) {
  const int64_t t = static_cast<int64_t>(s + 0.5);
  if (t >= 3600) return fmt::format("{}h{:02}m{:02}s", t / 3600, t / 60 % 60, t % 60);
  if (t >= 60) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

std::string fmt_bytes(int64_t b) {
  if (b < 0) return "-";
  const double mib = b / 1048576.0;
  return mib >= 1024 ? fmt::format("{:.2f}G", mib / 1024) : fmt::format("{:.0f}M", mib);
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    const bool plain = !a.empty() && a.find_first_not_of(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+%@") ==
        std::string::npos;
    if (plain) {
      s += a;
    } else {
      s += '\'';
      for (char c : a) s += c == '\'' ? std::string("'\\''") : std::string(1, c);
      s += '\'';
    }
  }
  return s;
}

int cores_available() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

std::string bucket_label(const SuiteCase& c) {
  if (!c.bucket_mb) return "-";
  return *c.bucket_mb <= 0 ? std::string("whole") : fmt::format("{}", *c.bucket_mb);
}

CaseResult describe(const SuiteCase& c, int repetition) {
  CaseResult r;
  r.name = c.name;
  r.repetition = repetition;
  r.ranks = c.ranks;
  r.mode = c.kind == CaseKind::kTrain ? c.mode : "allreduce";
  r.reduce = c.kind == CaseKind::kTrain ? c.reduce : "-";
  r.bucket = bucket_label(c);
  r.threads = c.kind == CaseKind::kAllReduce ? "-" : c.threads > 0 ? std::to_string(c.threads) : "auto";
  return r;
}

results::RunCase run_case_record(const SuiteCase& c, const LaunchPlan& plan, int repetition) {
  results::RunCase rc;
  rc.case_name = c.name;
  rc.config = c.to_json();
  rc.mode = c.kind == CaseKind::kTrain ? c.mode : "allreduce";
  rc.reduction = c.kind == CaseKind::kTrain ? c.reduce : "";
  rc.bucket_mb = c.bucket_mb;
  rc.world_size = c.ranks;
  rc.threads = c.threads;
  rc.transport = plan.transport;
  rc.links = c.transport == "tcp" ? fmt::format("{}", c.links > 0 ? c.links : 1) : c.transport;
  rc.launcher_command = shell_join(plan.argv);
  rc.repetition = repetition;
  return rc;
}

// A running job: its own process group, output to files.
struct Job {
  pid_t pid = -1;
  bool reaped = false;
  int status = 0;
};

Job spawn(const LaunchPlan& plan, const std::filesystem::path& stdout_path,
          const std::filesystem::path& stderr_path) {
  // Everything the child needs is built before fork().
  std::vector<std::string> env_strings;
  std::set<std::string> overridden;
  for (const auto& e : plan.env) overridden.insert(e.substr(0, e.find('=')));
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    if (!overridden.count(kv.substr(0, kv.find('=')))) env_strings.push_back(std::move(kv));
  }
  env_strings.insert(env_strings.end(), plan.env.begin(), plan.env.end());
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = plan.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  const std::string out_s = stdout_path.string(), err_s = stderr_path.string();

  const pid_t pid = fork();
  if (pid < 0) throw Error(fmt::format("cannot start a job: fork failed: {}", std::strerror(errno)), kExitFailure);
  if (pid == 0) {
    setpgid(0, 0);
    // The runner's terminal sends Ctrl-C to the runner, which decides.
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    const int out = open(out_s.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_s.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int in = open("/dev/null", O_RDONLY);
    if (out < 0 || err < 0 || in < 0) _exit(127);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    execve(argv[0], argv.data(), envp.data());
    dprintf(2, "trainscope suite: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent: no window where it is not yet a group
  return Job{pid};
}

bool try_reap(Job& job) {
  if (job.reaped) return true;
  const pid_t r = waitpid(job.pid, &job.status, WNOHANG);
  if (r == job.pid) job.reaped = true;
  return job.reaped;
}

// SIGTERM to the group and every process of the tree, a grace period, then
// SIGKILL; returns once the job is reaped.
void kill_job(Job& job, const profiler::ProcessPoller& poller) {
  auto signal_all = [&](int sig) {
    kill(-job.pid, sig);
    for (const auto& s : poller.last_poll()) kill(s.pid, sig);
  };
  signal_all(SIGTERM);
  const auto deadline = Clock::now() + std::chrono::seconds(3);
  while (!try_reap(job) && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  signal_all(SIGKILL);
  if (!job.reaped) {
    waitpid(job.pid, &job.status, 0);
    job.reaped = true;
  }
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}


void fill_from_summary(CaseResult& r, const results::RunSummary& s) {
  r.tokens_per_s = s.totals.tokens_per_s;
  r.step_ms_median = s.totals.step_time_median_s * 1e3;
  r.threads = std::to_string(s.threads_per_rank);
  double comm = 0, step = 0;
  for (const auto& rank : s.ranks) {
    comm += rank.phases[profiler::Phase::kComm].mean;
    step += rank.step_time.mean;
  }
  if (step > 0) r.comm_share = comm / step;
  // Each rank's own high-water mark beats the poller for short runs that end
  // between two polls; their sum bounds the job's simultaneous peak.
  int64_t hwm = 0;
  for (const auto& rank : s.ranks) {
    if (rank.vm_hwm < 0) {
      hwm = -1;
      break;
    }
    hwm += rank.vm_hwm;
  }
  if (hwm > 0 && static_cast<int>(s.ranks.size()) == s.world_size) r.peak_rss_bytes = hwm;
  if (r.bucket == "-" && r.reduce != "per-tensor" && s.options.contains("bucket_mb") &&
      s.options["bucket_mb"].is_number()) {
    const double mb = s.options["bucket_mb"].get<double>();
    r.bucket = mb <= 0 ? std::string("whole") : fmt::format("{}", mb);
  }
}

// Whether a hostfile's host is this machine (by name, or an address of one
// of its interfaces): Open MPI starts its ranks without a remote daemon, so
// loopback is enough for it. No name lookup: a dead DNS must not stall us.
bool is_this_host(const std::string& host) {
  if (host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1") return true;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0) {
    const std::string self(name);
    if (host == self || host == self.substr(0, self.find('.')) ||
        self == host.substr(0, host.find('.'))) {
      return true;
    }
  }
  ifaddrs* addrs = nullptr;
  if (getifaddrs(&addrs) != 0) return false;
  bool local = false;
  for (ifaddrs* a = addrs; a != nullptr && !local; a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    const int family = a->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw = family == AF_INET
                          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr)
                          : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr);
    local = inet_ntop(family, raw, text, sizeof(text)) != nullptr && host == text;
  }
  freeifaddrs(addrs);
  return local;
}

}  // namespace

std::string resolve_executable(const std::string& name, const std::string& flag) {
  auto executable = [](const std::filesystem::path& p) {
    return std::filesystem::is_regular_file(p) && access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) {
    if (!executable(name)) {
      throw Error(fmt::format("{} {}: no such executable file", flag, name));
    }
    return name;
  }
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::filesystem::path p = std::filesystem::path(dir.empty() ? "." : dir) / name;
    if (executable(p)) return p.string();
  }
  throw Error(fmt::format("{} {}: not found on PATH; install Open MPI (scripts/install-deps.sh) "
                          "or give {} /path/to/{}",
                          flag, name, flag, name));
}

LaunchPlan plan_case(const Suite& suite, const SuiteCase& c, const PlanContext& ctx,
                     const std::filesystem::path& output) {
  LaunchPlan plan;
  plan.uses_mpirun = c.ranks > 1 || c.transport != "auto" || !ctx.hostfile.empty();
  if (plan.uses_mpirun) {
    plan.argv = {ctx.mpirun, "-np", std::to_string(c.ranks)};
    if (!ctx.hostfile.empty()) {
      plan.argv.push_back("--hostfile");
      plan.argv.push_back(ctx.hostfile.string());
    }
    if (c.ranks > ctx.slots) plan.argv.push_back("--oversubscribe");
    plan.argv.push_back("--bind-to");
    plan.argv.push_back(suite.bind_to);
    auto mca = [&](const std::string& key, const std::string& value) {
      plan.argv.insert(plan.argv.end(), {"--mca", key, value});
      plan.transport[key] = value;
    };
    if (c.transport == "tcp") {
      mca("pml", "ob1");
      mca("btl", "tcp,self");
      mca("btl_tcp_links", std::to_string(c.links > 0 ? c.links : 1));
    } else if (c.transport == "shm") {
      mca("pml", "ob1");
      mca("btl", "vader,self");
    }
    // Pinned even for shm/auto: the TCP components open sockets regardless.
    const std::string& tcp_if = ctx.tcp_interface.empty() ? suite.tcp_interface : ctx.tcp_interface;
    mca("btl_tcp_if_include", tcp_if);
    mca("oob_tcp_if_include", tcp_if);
    plan.argv.insert(plan.argv.end(), ctx.extra_mpirun_args.begin(), ctx.extra_mpirun_args.end());
    if (ctx.as_root) {
      plan.env = {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};
    }
  }
  plan.argv.push_back(ctx.trainscope_binary.string());
  auto flag = [&](const std::string& name, const std::string& value) {
    plan.argv.push_back(name);
    plan.argv.push_back(value);
  };
  if (c.kind == CaseKind::kTrain) {
    plan.argv.push_back("train");
    flag("--model", c.model);
    flag("--mode", c.mode);
    flag("--reduce", c.reduce);
    if (c.bucket_mb) flag("--bucket-mb", fmt::format("{}", *c.bucket_mb));
    if (c.batch > 0) flag("--batch", std::to_string(c.batch));
    if (c.block > 0) flag("--block", std::to_string(c.block));
    flag("--steps", std::to_string(c.steps));
    flag("--warmup-steps", std::to_string(c.warmup_steps));
    flag("--data", c.data);
    flag("--tokenizer", c.tokenizer);
    flag("--eval-every", std::to_string(c.eval_every));
    flag("--shard", c.shard);
    if (c.lr) flag("--lr", fmt::format("{}", *c.lr));
    if (c.threads > 0) flag("--threads", std::to_string(c.threads));
    flag("--summary", output.string());
    plan.argv.push_back("--quiet");
    plan.argv.insert(plan.argv.end(), c.extra_args.begin(), c.extra_args.end());
  } else {
    plan.argv.push_back("allreduce-bench");
    flag("--min-bytes", std::to_string(c.sweep.min_bytes));
    flag("--max-bytes", std::to_string(c.sweep.max_bytes));
    flag("--factor", std::to_string(c.sweep.factor));
    flag("--iters", std::to_string(c.sweep.iters));
    flag("--warmup", std::to_string(c.sweep.warmup));
    flag("--jsonl", output.string());
  }
  return plan;
}

int SuiteResult::exit_code() const {
  if (interrupted) return 130;
  for (const auto& c : cases) {
    if (c.status == results::RunStatus::kFailed) return kExitFailure;
  }
  return kExitOk;
}

std::string format_result_header() {
  return fmt::format("{:<34} {:>5} {:<10} {:<10} {:>6} {:>7} {:>10} {:>9} {:>6} {:>8} {:>8}  {}\n",
                     "# case", "ranks", "mode", "reduce", "bucket", "threads", "tokens/s",
                     "step_ms", "comm%", "peak_rss", "busbw", "status");
}

std::string format_result_row(const CaseResult& r) {
  const std::string name = r.repetition > 0 ? fmt::format("{}#{}", r.name, r.repetition) : r.name;
  return fmt::format("{:<34} {:>5} {:<10} {:<10} {:>6} {:>7} {:>10} {:>9} {:>6} {:>8} {:>8}  {}\n",
                     name, r.ranks, r.mode, r.reduce, r.bucket, r.threads,
                     fmt_number(r.tokens_per_s, "{:.0f}"), fmt_number(r.step_ms_median, "{:.1f}"),
                     fmt_number(r.comm_share * 100, "{:.1f}"), fmt_bytes(r.peak_rss_bytes),
                     fmt_number(r.avg_busbw_gbps, "{:.3f}"), results::to_string(r.status));
}

std::string file_tail(const std::filesystem::path& path, int max_lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff start = std::max<std::streamoff>(0, size - 4096);
  in.seekg(start);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  size_t begin = text.size();
  for (int n = 0; n < max_lines && begin > 0; ++n) {
    const size_t nl = text.rfind('\n', begin - 1);
    begin = nl == std::string::npos ? 0 : nl;
    if (nl == std::string::npos) break;
  }
  if (begin < text.size() && text[begin] == '\n') ++begin;
  return text.substr(begin);
}

SuiteResult run_suite(const Suite& suite, const RunnerOptions& options) {
  // ---- Everything that can be wrong with the input, before any write ----
  PlanContext ctx;
  ctx.trainscope_binary = options.trainscope_binary.empty()
                              ? std::filesystem::read_symlink("/proc/self/exe")
                              : options.trainscope_binary;
  ctx.as_root = geteuid() == 0;
  ctx.extra_mpirun_args = options.extra_mpirun_args;
  ctx.tcp_interface = options.tcp_interface;
  ctx.slots = cores_available();
  if (!options.hostfile.empty()) {
    ctx.hostfile = std::filesystem::absolute(options.hostfile);
    ctx.slots = 0;
    const std::vector<HostEntry> hosts = load_hostfile(options.hostfile);
    for (const auto& h : hosts) ctx.slots += h.slots;
    // Open MPI's daemons on other hosts call mpirun back over the pinned
    // interface; over lo they never reach it and the job hangs until the
    // case's timeout. Say so now instead.
    const std::string& tcp_if = ctx.tcp_interface.empty() ? suite.tcp_interface : ctx.tcp_interface;
    if (tcp_if == "lo") {
      for (const auto& h : hosts) {
        if (!is_this_host(h.host)) {
          throw Error(fmt::format("{}: host '{}' is not this machine, but Open MPI's TCP traffic is "
                                  "pinned to lo, which cannot reach it: give --tcp-interface IFACE"
                                  " (the interface the hosts share, e.g. "
                                  "eth0) or set tcp_interface in the suite",
                                  options.hostfile.string(), h.host));
        }
      }
    }
  }
  if (options.repeat < 0) throw Error(fmt::format("--repeat must be positive, got {}", options.repeat));
  if (options.timeout_s && !(*options.timeout_s > 0))
    throw Error(fmt::format("--timeout must be positive, got {}", *options.timeout_s));
  const int repetitions = options.repeat > 0 ? options.repeat : suite.repetitions;
  const double timeout_s = options.timeout_s.value_or(suite.timeout_s);

  std::vector<const SuiteCase*> selected;
  for (const auto& c : suite.cases) {
    if (c.name.find(options.filter) != std::string::npos) selected.push_back(&c);
  }
  if (selected.empty()) {
    throw Error(fmt::format("--filter '{}' matches no case of suite '{}'", options.filter, suite.name));
  }
  const bool needs_mpirun = std::any_of(selected.begin(), selected.end(), [&](const SuiteCase* c) {
    return c->skip_reason.empty() && (c->ranks > 1 || c->transport != "auto" || !ctx.hostfile.empty());
  });
  ctx.mpirun = options.mpirun;
  if (needs_mpirun) {
    if (options.dry_run) {
      try { ctx.mpirun = resolve_executable(options.mpirun, "--mpirun"); } catch (const Error&) {}
    } else {
      ctx.mpirun = resolve_executable(options.mpirun, "--mpirun");
    }
  }

  std::FILE* out = options.out;
  std::FILE* progress = options.progress;
  SuiteResult result;

  if (options.dry_run) {
    std::fprintf(out, "# suite %s: %zu case(s) x %d repetition(s), timeout %gs (dry run)\n",
                 suite.name.c_str(), selected.size(), repetitions, timeout_s);
    for (const SuiteCase* c : selected) {
      if (!c->skip_reason.empty()) {
        std::fprintf(out, "%s: SKIPPED (%s)\n", c->name.c_str(), c->skip_reason.c_str());
        result.cases.push_back(describe(*c, 0));
        result.cases.back().status = results::RunStatus::kSkipped;
        result.cases.back().error = c->skip_reason;
        continue;
      }
      const LaunchPlan plan = plan_case(suite, *c, ctx, c->kind == CaseKind::kTrain ? "SUMMARY.json" : "ROWS.jsonl");
      std::string env;
      for (const auto& e : plan.env) env += e + " ";
      std::fprintf(out, "%s: %s%s\n", c->name.c_str(), env.c_str(), shell_join(plan.argv).c_str());
    }
    std::fflush(out);
    return result;
  }

  results::ResultsDb db = results::ResultsDb::open_for_writing(options.db_path);
  if (int stale = db.mark_stale_running_failed("the runner that started it died"); stale > 0) {
    std::fprintf(progress, "trainscope suite: marked %d run(s) left 'running' by a dead runner as failed\n", stale);
  }

  // Rank 0 writes each case's summary on its host. On one machine that is
  // this one; with a hostfile it is the first host, which shares the results
  // database's folder more often than it shares our /tmp.
  const std::filesystem::path work_root =
      ctx.hostfile.empty() ? std::filesystem::path("/tmp")
                           : std::filesystem::absolute(options.db_path).parent_path();
  std::string tmpl = (work_root / "trainscope-suite-XXXXXX").string();
  const char* dir = mkdtemp(tmpl.data());
  if (!dir) {
    throw Error(fmt::format("cannot create a temporary directory in {}: {}", work_root.string(),
                            std::strerror(errno)),
                kExitFailure);
  }
  const std::filesystem::path work_dir(dir);
  struct Cleanup {
    std::filesystem::path dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{work_dir};

  results::SuiteInfo info;
  info.name = suite.name;
  info.definition = suite.text;
  info.git_revision = TRAINSCOPE_GIT_REVISION;
  info.environment = results::capture_environment(options.command_line);
  info.host_facts = results::host_facts(info.environment);
  info.command_line = options.command_line;
  result.suite_id = db.begin_suite(info);

  SignalGuard signals;
  const int total = static_cast<int>(selected.size()) * repetitions;
  const auto suite_start = Clock::now();
  int index = 0, measured = 0;
  double measured_seconds = 0;
  std::fprintf(progress, "trainscope suite %s: %d case(s), results in %s (suite id %lld)\n",
               suite.name.c_str(), total, options.db_path.c_str(),
               static_cast<long long>(result.suite_id));
  std::fputs(format_result_header().c_str(), out);
  std::fflush(out);

  for (int rep = 0; rep < repetitions && !g_interrupted; ++rep) {
    for (const SuiteCase* cp : selected) {
      if (g_interrupted) break;
      const SuiteCase& c = *cp;
      ++index;
      CaseResult r = describe(c, repetitions > 1 ? rep : 0);
      r.repetition = rep;
      const double elapsed = std::chrono::duration<double>(Clock::now() - suite_start).count();
      const int runnable_left = total - index + 1;
      const std::string eta = measured > 0 ? fmt_duration(measured_seconds / measured * runnable_left) : "?";
      std::fprintf(progress, "[%d/%d] %s%s  elapsed %s  ETA %s\n", index, total, c.name.c_str(),
                   repetitions > 1 ? fmt::format(" (repetition {})", rep).c_str() : "",
                   fmt_duration(elapsed).c_str(), eta.c_str());
      std::fflush(progress);

      const std::filesystem::path output =
          work_dir / fmt::format("case-{}.{}", index, c.kind == CaseKind::kTrain ? "json" : "jsonl");
      const LaunchPlan plan = plan_case(suite, c, ctx, output);
      const results::RunCase record = run_case_record(c, plan, rep);

      if (!c.skip_reason.empty()) {
        r.run_id = db.mark_skipped(result.suite_id, record, c.skip_reason);
        r.status = results::RunStatus::kSkipped;
        r.error = c.skip_reason;
        std::fprintf(progress, "  skipped: %s\n", c.skip_reason.c_str());
        std::fputs(format_result_row(r).c_str(), out);
        std::fflush(out);
        result.cases.push_back(r);
        continue;
      }

      r.run_id = db.begin_run(result.suite_id, record);
      const double case_timeout = options.timeout_s.value_or(c.timeout_s.value_or(timeout_s));
      const std::filesystem::path out_path = work_dir / fmt::format("case-{}.stdout", index);
      const std::filesystem::path err_path = work_dir / fmt::format("case-{}.stderr", index);
      const auto start = Clock::now();
      Job job = spawn(plan, out_path, err_path);
      profiler::ProcessPoller poller(job.pid);
      bool timed_out = false, interrupted = false;
      int64_t peak = -1;
      while (!try_reap(job)) {
        poller.poll();
        int64_t sum = 0;
        for (const auto& s : poller.last_poll()) {
          if (s.role != profiler::ProcessRole::kLauncher && s.rss_bytes > 0) sum += s.rss_bytes;
        }
        if (!poller.last_poll().empty()) peak = std::max(peak, sum);
        if (g_interrupted) {
          interrupted = true;
          kill_job(job, poller);
          break;
        }
        if (std::chrono::duration<double>(Clock::now() - start).count() > case_timeout) {
          timed_out = true;
          kill_job(job, poller);
          break;
        }
        // Sleep in short slices so Ctrl-C and the timeout act promptly.
        const auto wake = Clock::now() + std::chrono::duration<double>(options.poll_interval_s);
        while (Clock::now() < wake && !g_interrupted && !try_reap(job)) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }
      r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      r.exit_code = exit_code_of(job.status);
      r.peak_rss_bytes = peak;

      db.add_poller_samples(r.run_id, poller.samples());

      std::optional<results::RunSummary> summary;
      std::vector<results::AllReduceRow> rows;
      std::string problem;
      const std::string tail = file_tail(err_path, 15);
      if (interrupted) {
        problem = "interrupted";
      } else if (timed_out) {
        problem = fmt::format("timed out after {:g} s (killed)", case_timeout);
      } else if (r.exit_code != 0) {
        problem = fmt::format("exit code {}", r.exit_code);
      }
      if (problem.empty() || (!interrupted && !timed_out)) {
        // Ingest whatever the job left, even from a failed run (a NaN loss
        // still writes a summary).
        try {
          if (c.kind == CaseKind::kTrain) {
            if (std::filesystem::exists(output)) summary = results::load_run_summary(output);
            else if (problem.empty()) problem = "the job exited 0 but wrote no summary";
          } else {
            if (std::filesystem::exists(output)) rows = results::load_allreduce_rows(output);
            else if (problem.empty()) problem = "the job exited 0 but wrote no sweep rows";
          }
        } catch (const Error& e) {
          if (problem.empty()) problem = e.what();
        }
      }
      if (summary) {
        fill_from_summary(r, *summary);
        if (summary->status == results::RunStatus::kFailed && problem.empty()) problem = summary->error;
      }
      if (!rows.empty()) {
        int64_t wrong = 0;
        double busbw = 0;
        for (const auto& row : rows) {
          wrong += row.wrong;
          busbw += row.busbw_gbps;
        }
        r.avg_busbw_gbps = busbw / rows.size();
        if (wrong > 0 && problem.empty()) problem = fmt::format("{} wrong element(s) in the all-reduce verification", wrong);
        db.add_allreduce_rows(r.run_id, rows);
      }
      r.status = problem.empty() ? results::RunStatus::kOk : results::RunStatus::kFailed;
      if (!problem.empty()) {
        r.error = tail.empty() ? problem : problem + "; stderr:\n" + tail;
      }
      db.finish_run(r.run_id, r.status, r.exit_code, r.error, summary ? &*summary : nullptr);
      if (!interrupted) {
        ++measured;
        measured_seconds += std::chrono::duration<double>(Clock::now() - start).count();
      }
      if (r.status == results::RunStatus::kFailed) {
        std::fprintf(progress, "  FAILED: %s\n", r.error.c_str());
      }
      std::fputs(format_result_row(r).c_str(), out);
      std::fflush(out);
      result.cases.push_back(r);
      if (interrupted) result.interrupted = true;
    }
  }
  if (g_interrupted) result.interrupted = true;
  db.finish_suite(result.suite_id);
  int ok = 0, failed = 0, skipped = 0;
  for (const auto& c : result.cases) {
    if (c.status == results::RunStatus::kOk) ++ok;
    else if (c.status == results::RunStatus::kFailed) ++failed;
    else ++skipped;
  }
  std::fprintf(progress, "trainscope suite %s: %d ok, %d failed, %d skipped%s in %s; results: %s (suite id %lld)\n",
               suite.name.c_str(), ok, failed, skipped, result.interrupted ? " (interrupted)" : "",
               fmt_duration(std::chrono::duration<double>(Clock::now() - suite_start).count()).c_str(),
               options.db_path.c_str(), static_cast<long long>(result.suite_id));
  std::fflush(progress);
  return result;
}


}  // namespace trainscope::suites
