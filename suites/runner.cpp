#include "suites/runner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/check.h"
#include "profiler/clock.h"
#include "profiler/supervise.h"
#include "profiler/process_poller.h"
#include "profiler/stall_watchdog.h"
#include "results/environment.h"
#include "results/results_db.h"
#include "suites/case_hosts.h"
#include "suites/case_job.h"
#include "suites/limit_probes.h"

#ifndef TRAINSCOPE_GIT_REVISION
#define TRAINSCOPE_GIT_REVISION "unknown"
#endif

namespace trainscope::suites {
namespace {

namespace fs = std::filesystem;
using profiler::Clock;
using profiler::seconds_since;

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

std::string bucket_label(std::optional<double> bucket_mb) {
  if (!bucket_mb) return "-";
  return *bucket_mb <= 0 ? std::string("whole") : fmt::format("{}", *bucket_mb);
}

// The case as the database records it before its job starts.
results::RunCase run_case_record(const SuiteCase& c, const LaunchPlan& plan, int repetition,
                                 const CaseHosts& where) {
  results::RunCase rc;
  rc.case_name = c.name;
  rc.config = c.to_json();
  const bool train = c.kind == CaseKind::kTrain;
  rc.mode = train ? std::string(training::to_string(c.train.data.data_mode)) : "allreduce";
  rc.reduction = train ? std::string(comm::reduce_strategy_name(c.train.reduce)) : "";
  if (train && c.is_set(*training::find_suite_option("bucket_mb")))
    rc.bucket_mb = c.train.bucket_mb;
  rc.world_size = c.ranks;
  rc.threads = c.train.threads;
  rc.transport = plan.transport;
  rc.links = case_links(c);
  rc.launcher_command = shell_join(plan.argv);
  rc.repetition = repetition;
  rc.host_count = c.hosts;
  rc.cores_per_host = c.cores_per_host;
  rc.link = where.link;
  rc.link_gbps = where.link_gbps;
  rc.link_latency_us = where.link_latency_us;
  return rc;
}

// ---- plan: everything that can be wrong with the input, before any write ----

struct SuitePlan {
  PlanContext ctx;
  std::vector<const SuiteCase*> cases;  // those --filter selects, skipped ones included
  int repetitions = 1;
  double timeout_s = 0;  // per case unless the case says otherwise
};

SuitePlan plan_suite(const Suite& suite, const RunnerOptions& options) {
  if (options.repeat < 0)
    throw Error(fmt::format("--repeat must be positive, got {}", options.repeat));
  if (options.timeout_s && !(*options.timeout_s > 0))
    throw Error(fmt::format("--timeout must be positive, got {}", *options.timeout_s));
  results::planted_slowdown_pct();  // a bad TRAINSCOPE_SLOWDOWN, before the database is made
  SuitePlan plan;
  PlanContext& ctx = plan.ctx;
  ctx.trainscope_binary = options.trainscope_binary.empty() ? fs::read_symlink("/proc/self/exe")
                                                            : options.trainscope_binary;
  ctx.as_root = geteuid() == 0;
  ctx.extra_mpirun_args = options.extra_mpirun_args;
  ctx.tcp_interface = options.tcp_interface;
  ctx.slots = cores_available();
  ctx.mpirun = options.mpirun;
  std::vector<HostEntry> hosts;
  if (!options.hostfile.empty()) {
    ctx.hostfile = fs::absolute(options.hostfile);
    hosts = load_hostfile(options.hostfile);
    ctx.slots = 0;
    for (const auto& h : hosts) ctx.slots += h.slots;
  }
  plan.repetitions = options.repeat > 0 ? options.repeat : suite.repetitions;
  plan.timeout_s = options.timeout_s.value_or(suite.timeout_s);
  for (const auto& c : suite.cases) {
    if (c.name.find(options.filter) != std::string::npos) plan.cases.push_back(&c);
  }
  if (plan.cases.empty()) {
    throw Error(
        fmt::format("--filter '{}' matches no case of suite '{}'", options.filter, suite.name));
  }
  // Each case's own interface must reach the hosts (lo reaches only this one).
  if (!ctx.hostfile.empty()) {
    for (const SuiteCase* c : plan.cases) {
      if (c->skip_reason.empty()) {
        check_hosts_reachable(hosts, case_interface(suite, *c, ctx), options.hostfile);
      }
    }
  }
  const bool mpirun = std::any_of(plan.cases.begin(), plan.cases.end(), [&](const SuiteCase* c) {
    return c->skip_reason.empty() && needs_mpirun(*c, ctx);
  });
  // A dry run shows the plan even where mpirun is missing.
  if (mpirun && !options.dry_run) ctx.mpirun = resolve_executable(options.mpirun, "--mpirun");
  if (mpirun && options.dry_run) {
    try {
      ctx.mpirun = resolve_executable(options.mpirun, "--mpirun");
    } catch (const Error&) {}
  }
  return plan;
}

SuiteResult print_dry_run(const Suite& suite, const SuitePlan& plan, CaseHostProvider& hosts,
                          std::FILE* out) {
  std::fprintf(out, "# suite %s: %zu case(s) x %d repetition(s), timeout %gs (dry run)\n",
               suite.name.c_str(), plan.cases.size(), plan.repetitions, plan.timeout_s);
  SuiteResult result;
  for (const SuiteCase* c : plan.cases) {
    const CaseHosts where = hosts.plan_only(*c);
    const LaunchPlan launch = plan_case(
        suite, *c, where.ctx, c->kind == CaseKind::kTrain ? "SUMMARY.json" : "ROWS.jsonl");
    const std::string& skip = c->skip_reason.empty() ? where.skip_reason : c->skip_reason;
    if (!skip.empty()) {
      std::fprintf(out, "%s: SKIPPED (%s)\n", c->name.c_str(), skip.c_str());
      RunOutcome& skipped = result.runs.emplace_back();
      skipped.row.run_case = run_case_record(*c, launch, 0, where);
      skipped.row.status = results::RunStatus::kSkipped;
      skipped.row.error = skip;
      continue;
    }
    std::string env;
    for (const auto& e : launch.env) env += e + " ";
    // A pytorch case's export runs first (suites/pytorch_peer.h).
    const std::string prepare = launch.prepare.empty() ? "" : shell_join(launch.prepare) + " && ";
    std::fprintf(out, "%s: %s%s%s\n", c->name.c_str(), prepare.c_str(), env.c_str(),
                 shell_join(launch.argv).c_str());
  }
  std::fflush(out);
  return result;
}

// Where the cases' files go: rank 0 writes each case's summary on its host.
// On one machine that is this one; with a hostfile it is the first host,
// which shares the results database's folder more often than our /tmp.
fs::path work_root(const SuitePlan& plan, const RunnerOptions& options) {
  return plan.ctx.hostfile.empty() ? fs::path() : fs::absolute(options.db_path).parent_path();
}

fs::path case_file(const ScopedTempDir& dir, int index, std::string_view extension) {
  return dir.path() / fmt::format("case-{}.{}", index, extension);
}

// ---- launch and record every case, printing as it goes ----

std::vector<std::string> case_names(const SuitePlan& plan) {
  std::vector<std::string> names;
  for (const SuiteCase* c : plan.cases) names.push_back(c->name);
  return names;
}

class SuiteRun {
 public:
  SuiteRun(const Suite& suite, const RunnerOptions& options, const SuitePlan& plan)
      : suite_(suite),
        options_(options),
        plan_(plan),
        db_(results::ResultsDb::open_for_writing(options.db_path)),
        work_dir_("trainscope-suite", work_root(plan, options)),
        hosts_(plan.ctx, options.cluster, work_dir_.path(), options.progress) {}

  SuiteResult run() {
    begin();
    std::mt19937_64 shuffle(order_seed_);
    std::vector<const SuiteCase*> order = plan_.cases;
    for (int rep = 0; rep < plan_.repetitions && !signals_.interrupted(); ++rep) {
      // The first round keeps the suite's order, which reports list cases in
      // (the order of their first runs); the others are shuffled.
      if (rep > 0) std::shuffle(order.begin(), order.end(), shuffle);
      for (const SuiteCase* c : order) {
        if (signals_.interrupted()) break;
        result_.runs.push_back(run_case(*c, rep));
        print_row(result_.runs.back());
      }
    }
    finish();
    return std::move(result_);
  }

 private:
  void begin();
  void measure_limits();
  RunOutcome run_case(const SuiteCase& c, int rep);
  CaseHosts case_hosts(const SuiteCase& c, std::string* error);
  void print_progress(const SuiteCase& c, int rep);
  void record(RunOutcome& out, const JobOutcome& job, Ingested in, const fs::path& stderr_path);
  void print_row(const RunOutcome& out);
  void finish();

  const Suite& suite_;
  const RunnerOptions& options_;
  const SuitePlan& plan_;
  const int name_width_ = result_name_width(case_names(plan_), plan_.repetitions);
  const uint64_t order_seed_ = options_.order_seed.value_or(std::random_device{}());
  results::ResultsDb db_;
  ScopedTempDir work_dir_;
  CaseHostProvider hosts_;  // after work_dir_: its clusters go down first
  SignalGuard signals_{SignalPolicy::kRecordInterrupt};
  SuiteResult result_;
  Clock::time_point start_ = Clock::now();
  int index_ = 0;
  int measured_ = 0;  // cases whose time counts for the ETA
  double measured_seconds_ = 0;
};

void SuiteRun::begin() {
  if (int stale = db_.mark_stale_running_failed("the runner that started it died"); stale > 0) {
    std::fprintf(options_.progress,
                 "trainscope suite: marked %d run(s) left 'running' by a dead runner as failed\n",
                 stale);
  }
  results::SuiteInfo info;
  info.name = suite_.name;
  info.definition = suite_.text;
  info.git_revision = TRAINSCOPE_GIT_REVISION;
  info.environment = results::capture_environment(options_.command_line);
  if (plan_.repetitions > 1) {
    info.environment["run_order"] = {{"rounds", plan_.repetitions},
                                     {"shuffled", true},
                                     {"seed", order_seed_}};
  }
  info.host_facts = results::host_facts(info.environment);
  info.command_line = options_.command_line;
  result_.suite_id = db_.begin_suite(info);
  std::fprintf(options_.progress,
               "trainscope suite %s: %zu case(s), results in %s (suite id %lld)\n",
               suite_.name.c_str(), plan_.cases.size() * plan_.repetitions,
               options_.db_path.c_str(), static_cast<long long>(result_.suite_id));
  if (options_.measure_limits) measure_limits();
  std::fputs(format_result_header(name_width_).c_str(), options_.out);
  std::fflush(options_.out);
}

// Before the first case, on a machine the suite does not load yet.
void SuiteRun::measure_limits() {
  const auto start = Clock::now();
  std::fprintf(options_.progress, "measuring the machine's limits (--no-limits skips this)\n");
  std::fflush(options_.progress);
  const auto limits =
      measure_suite_limits(suite_, plan_.cases, plan_.ctx, work_dir_.path(), options_.progress);
  db_.add_machine_limits(result_.suite_id, limits);
  for (const auto& l : limits) {
    std::fprintf(options_.progress, "  %s: %.2f %s\n", results::describe_key(l).c_str(), l.value,
                 std::string(results::limit_unit(l.kind)).c_str());
  }
  std::fprintf(options_.progress, "  (%.1f s)\n", seconds_since(start));
}

void SuiteRun::print_progress(const SuiteCase& c, int rep) {
  const int total = static_cast<int>(plan_.cases.size()) * plan_.repetitions;
  const int left = total - index_ + 1;
  const std::string eta = measured_ > 0 ? fmt_duration(measured_seconds_ / measured_ * left) : "?";
  std::fprintf(options_.progress, "[%d/%d] %s%s  elapsed %s  ETA %s\n", index_, total,
               c.name.c_str(),
               plan_.repetitions > 1 ? fmt::format(" (repetition {})", rep).c_str() : "",
               fmt_duration(seconds_since(start_)).c_str(), eta.c_str());
  std::fflush(options_.progress);
}

// Where `c` runs (a cluster brought up for it, its link measured). A cluster
// that cannot be brought up fails this case only: `error` says why.
CaseHosts SuiteRun::case_hosts(const SuiteCase& c, std::string* error) {
  if (!c.skip_reason.empty()) return hosts_.plan_only(c);
  try {
    return hosts_.prepare(suite_, c);
  } catch (const Error& e) {
    *error = e.what();
    return hosts_.plan_only(c);
  }
}

RunOutcome SuiteRun::run_case(const SuiteCase& c, int rep) {
  ++index_;
  print_progress(c, rep);
  const fs::path output =
      case_file(work_dir_, index_, c.kind == CaseKind::kTrain ? "json" : "jsonl");
  std::string hosts_error;
  const CaseHosts where = case_hosts(c, &hosts_error);
  const LaunchPlan plan = plan_case(suite_, c, where.ctx, output);
  RunOutcome out;
  out.row.suite_id = result_.suite_id;
  out.row.run_case = run_case_record(c, plan, rep, where);
  if (const std::string& skip = c.skip_reason.empty() ? where.skip_reason : c.skip_reason;
      !skip.empty()) {
    out.row.id = db_.mark_skipped(result_.suite_id, out.row.run_case, skip);
    out.row.status = results::RunStatus::kSkipped;
    out.row.error = skip;
    std::fprintf(options_.progress, "  skipped: %s\n", skip.c_str());
    return out;
  }
  out.row.id = db_.begin_run(result_.suite_id, out.row.run_case);
  if (!hosts_error.empty()) {  // recorded failed; the suite goes on
    out.row.status = results::RunStatus::kFailed;
    out.row.exit_code = kExitFailure;
    out.row.error = "its hosts could not be made ready: " + hosts_error;
    db_.finish_run(out.row.id, out.row.status, kExitFailure, out.row.error, nullptr);
    return out;
  }
  const double timeout_s = options_.timeout_s.value_or(c.timeout_s.value_or(plan_.timeout_s));
  const fs::path stderr_path = case_file(work_dir_, index_, "stderr");
  const auto start = Clock::now();
  const JobOutcome job = run_job(plan, case_file(work_dir_, index_, "stdout"), stderr_path,
                                 timeout_s, options_.poll_interval_s, signals_);
  out.seconds = seconds_since(start);
  db_.add_poller_samples(out.row.id, job.samples);
  record(out, job, ingest(c, job, output, stderr_path, timeout_s), stderr_path);
  if (job.run.interrupted) {
    result_.interrupted = true;
  } else {
    ++measured_;
    measured_seconds_ += seconds_since(start);
  }
  return out;
}

// The run's final state, in one finish_run transaction with its summary.
void SuiteRun::record(RunOutcome& out, const JobOutcome& job, Ingested in,
                      const fs::path& stderr_path) {
  out.figures = results::run_figures(in.summary ? &*in.summary : nullptr, in.rows);
  // Each rank's own high-water mark beats the poller for short runs that end
  // between two polls; their sum bounds the job's simultaneous peak.
  out.peak_rss_bytes = out.figures.ranks_vm_hwm > 0 ? out.figures.ranks_vm_hwm : job.peak_rss_bytes;
  if (out.figures.wrong_elements > 0 && in.problem.empty()) {
    in.problem = fmt::format("{} wrong element(s) in the all-reduce verification",
                             out.figures.wrong_elements);
  }
  if (!in.rows.empty()) db_.add_allreduce_rows(out.row.id, in.rows);
  out.row.status = in.problem.empty() ? results::RunStatus::kOk : results::RunStatus::kFailed;
  out.row.exit_code = job.run.exit_code;
  if (!in.problem.empty()) {
    out.row.error = in.problem;
    if (!in.last_seen.empty()) out.row.error += "; the ranks were last seen at:" + in.last_seen;
    const std::string tail = file_tail(stderr_path, 15);
    if (!tail.empty()) out.row.error += (in.last_seen.empty() ? "; " : "\n") + ("stderr:\n" + tail);
  }
  db_.finish_run(out.row.id, out.row.status, job.run.exit_code, out.row.error,
                 in.summary ? &*in.summary : nullptr);
  out.summary = std::move(in.summary);
}

void SuiteRun::print_row(const RunOutcome& out) {
  if (out.row.status == results::RunStatus::kFailed) {
    std::fprintf(options_.progress, "  FAILED: %s\n", out.row.error.c_str());
  }
  std::fputs(format_result_row(out, name_width_).c_str(), options_.out);
  std::fflush(options_.out);
}

void SuiteRun::finish() {
  if (signals_.interrupted()) result_.interrupted = true;
  db_.finish_suite(result_.suite_id);
  int counts[4] = {};
  for (const auto& r : result_.runs) ++counts[static_cast<int>(r.row.status)];
  using results::RunStatus;
  std::fprintf(
      options_.progress,
      "trainscope suite %s: %d ok, %d failed, %d skipped%s in %s; results: %s (suite id "
      "%lld)\n",
      suite_.name.c_str(), counts[static_cast<int>(RunStatus::kOk)],
      counts[static_cast<int>(RunStatus::kFailed)], counts[static_cast<int>(RunStatus::kSkipped)],
      result_.interrupted ? " (interrupted)" : "", fmt_duration(seconds_since(start_)).c_str(),
      options_.db_path.c_str(), static_cast<long long>(result_.suite_id));
  std::fflush(options_.progress);
}

}  // namespace

int SuiteResult::exit_code() const {
  if (interrupted) return 130;
  for (const auto& r : runs) {
    if (r.row.status == results::RunStatus::kFailed) return kExitFailure;
  }
  return kExitOk;
}

namespace {
constexpr const char* kResultRow =
    "{:<{}} {:>5} {:<10} {:<10} {:>6} {:>7} {:>10} {:>9} {:>6} {:>8} {:>8}  {}\n";
}  // namespace

int result_name_width(const std::vector<std::string>& case_names, int repetitions) {
  const size_t suffix = repetitions > 1 ? 1 + std::to_string(repetitions - 1).size() : 0;
  size_t width = kMinCaseColumn;
  for (const std::string& name : case_names) width = std::max(width, name.size() + suffix);
  return static_cast<int>(width);
}

std::string format_result_header(int name_width) {
  return fmt::format(fmt::runtime(kResultRow), "# case", name_width, "ranks", "mode", "reduce",
                     "bucket", "threads", "tokens/s", "step_ms", "comm%", "peak_rss", "busbw",
                     "status");
}

std::string format_result_row(const RunOutcome& r, int name_width) {
  const results::RunCase& c = r.row.run_case;
  const bool sweep = c.mode == "allreduce";
  std::optional<double> bucket_mb = c.bucket_mb;
  std::string threads = sweep ? "-" : c.threads > 0 ? std::to_string(c.threads) : "auto";
  if (r.summary) {
    // What the trainer chose where the case left it open.
    threads = std::to_string(r.summary->threads_per_rank);
    const auto& options = r.summary->options;
    if (!bucket_mb && c.reduction != "per-tensor" && options.contains("bucket_mb") &&
        options["bucket_mb"].is_number()) {
      bucket_mb = options["bucket_mb"].get<double>();
    }
  }
  const std::string name =
      c.repetition > 0 ? fmt::format("{}#{}", c.case_name, c.repetition) : c.case_name;
  const results::RunFigures& f = r.figures;
  return fmt::format(fmt::runtime(kResultRow), name, name_width, c.world_size, c.mode,
                     c.reduction.empty() ? "-" : c.reduction, bucket_label(bucket_mb), threads,
                     fmt_number(f.tokens_per_s, "{:.0f}"),
                     fmt_number(f.step_median_s * 1e3, "{:.1f}"),
                     fmt_number(f.comm_share * 100, "{:.1f}"), fmt_bytes(r.peak_rss_bytes),
                     fmt_number(f.avg_busbw_gbps, "{:.3f}"), results::to_string(r.row.status));
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
  const SuitePlan plan = plan_suite(suite, options);
  if (options.dry_run) {
    CaseHostProvider hosts(plan.ctx, options.cluster, fs::temp_directory_path(), options.progress);
    return print_dry_run(suite, plan, hosts, options.out);
  }
  return SuiteRun(suite, options, plan).run();
}

}  // namespace trainscope::suites
