#include "suites/runner.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

#include "kernels/check.h"
#include "profiler/process.h"
#include "profiler/process_poller.h"
#include "results/environment.h"
#include "results/results_db.h"

#ifndef TRAINSCOPE_GIT_REVISION
#define TRAINSCOPE_GIT_REVISION "unknown"
#endif

namespace trainscope::suites {
namespace {

using Clock = std::chrono::steady_clock;

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

// What became of one case's job.
struct JobOutcome {
  profiler::SuperviseResult run;  // exit code, timed out, interrupted, seconds
  int64_t peak_rss_bytes = -1;    // the ranks' RSS summed, peak over polls
  std::vector<profiler::ProcessSample> samples;
  std::string start_error;        // why it could not start (exit code 127/126...)
};

// Runs the job in its own process group (the runner decides what Ctrl-C
// does to it), stdin from /dev/null, output to files, polling its tree until
// it exits, outlives `timeout_s` or the runner is interrupted; a job that
// does not end is killed with its whole tree.
JobOutcome run_job(const LaunchPlan& plan, const std::filesystem::path& stdout_path,
                   const std::filesystem::path& stderr_path, double timeout_s,
                   double poll_interval_s, const profiler::SignalGuard& signals) {
  profiler::SpawnOptions spawn_options;
  spawn_options.argv = plan.argv;
  spawn_options.env = plan.env;
  spawn_options.stdin_file = "/dev/null";
  spawn_options.stdout_file = stdout_path;
  spawn_options.stderr_file = stderr_path;
  spawn_options.own_process_group = true;
  JobOutcome outcome;
  std::optional<profiler::ChildProcess> job;
  try {
    job.emplace(profiler::spawn(spawn_options));
  } catch (const Error& e) {
    outcome.run.exit_code = e.exit_code();
    outcome.start_error = e.what();
    return outcome;
  }
  profiler::ProcessPoller poller(job->pid());
  profiler::SuperviseOptions supervise_options;
  supervise_options.poll_interval_seconds = poll_interval_s;
  supervise_options.timeout_seconds = timeout_s;
  supervise_options.on_poll = [&outcome](const profiler::ProcessPoller& polled, double) {
    int64_t sum = 0;
    for (const auto& s : polled.last_poll()) {
      if (s.role != profiler::ProcessRole::kLauncher && s.rss_bytes > 0) sum += s.rss_bytes;
    }
    if (!polled.last_poll().empty()) outcome.peak_rss_bytes = std::max(outcome.peak_rss_bytes, sum);
    return true;
  };
  outcome.run = profiler::supervise(&*job, poller, signals, supervise_options);
  outcome.samples = poller.samples();
  return outcome;
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
  try {
    return profiler::find_program(name, flag);
  } catch (const Error& e) {
    // A flag naming a program that cannot run is bad input to the suite.
    if (e.exit_code() != 127 || name.find('/') != std::string::npos) throw Error(e.what());
    throw Error(fmt::format("{}; install Open MPI (scripts/install-deps.sh) or give {} /path/to/{}",
                            e.what(), flag, name));
  }
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

  profiler::SignalGuard signals(profiler::SignalPolicy::kRecordInterrupt);
  const int total = static_cast<int>(selected.size()) * repetitions;
  const auto suite_start = Clock::now();
  int index = 0, measured = 0;
  double measured_seconds = 0;
  std::fprintf(progress, "trainscope suite %s: %d case(s), results in %s (suite id %lld)\n",
               suite.name.c_str(), total, options.db_path.c_str(),
               static_cast<long long>(result.suite_id));
  std::fputs(format_result_header().c_str(), out);
  std::fflush(out);

  for (int rep = 0; rep < repetitions && !signals.interrupted(); ++rep) {
    for (const SuiteCase* cp : selected) {
      if (signals.interrupted()) break;
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
      const JobOutcome job =
          run_job(plan, out_path, err_path, case_timeout, options.poll_interval_s, signals);
      const bool timed_out = job.run.timed_out, interrupted = job.run.interrupted;
      r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      r.exit_code = job.run.exit_code;
      r.peak_rss_bytes = job.peak_rss_bytes;

      db.add_poller_samples(r.run_id, job.samples);

      std::optional<results::RunSummary> summary;
      std::vector<results::AllReduceRow> rows;
      std::string problem;
      const std::string tail = file_tail(err_path, 15);
      if (interrupted) {
        problem = "interrupted";
      } else if (timed_out) {
        problem = fmt::format("timed out after {:g} s (killed)", case_timeout);
      } else if (!job.start_error.empty()) {
        problem = job.start_error;
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
  if (signals.interrupted()) result.interrupted = true;
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
