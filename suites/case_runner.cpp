#include "suites/case_runner.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/check.h"
#include "profiler/clock.h"
#include "results/environment.h"

namespace trainscope::suites {
namespace {

namespace fs = std::filesystem;
using profiler::Clock;
using profiler::seconds_since;

// Where the cases' files go: rank 0 writes each case's summary on its host.
// On one machine that is this one; with a hostfile it is the first host,
// which shares the results database's folder more often than our /tmp.
fs::path work_root(const SuitePlan& plan, const RunnerOptions& options) {
  return plan.ctx.hostfile.empty() ? fs::path() : fs::absolute(options.db_path).parent_path();
}

fs::path case_file(const ScopedTempDir& dir, int index, std::string_view extension) {
  return dir.path() / fmt::format("case-{}.{}", index, extension);
}

}  // namespace

results::RunCase run_case_record(const SuiteCase& c, const LaunchPlan& plan, int repetition,
                                 const CaseHosts& where) {
  results::RunCase rc;
  rc.case_name = c.name;
  rc.config = c.to_json();
  const bool train = c.kind == CaseKind::kTrain;
  rc.mode = train ? std::string(enum_name(c.train.data.data_mode)) : "allreduce";
  rc.reduction = train ? std::string(enum_name(c.train.reduce)) : "";
  if (train && c.is_set(*options::find_suite_option("bucket_mb"))) rc.bucket_mb = c.train.bucket_mb;
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

CaseRunner::CaseRunner(const Suite& suite, const RunnerOptions& options, const SuitePlan& plan,
                       results::ResultsDb& db, const SignalGuard& signals)
    : suite_(suite),
      options_(options),
      plan_(plan),
      db_(db),
      signals_(signals),
      work_dir_("trainscope-suite", work_root(plan, options)),
      hosts_(plan.ctx, options.cluster, work_dir_.path(), options.progress) {}

CaseRunner::Prepared CaseRunner::prepare(const SuiteCase& c, const fs::path& binary) {
  ++index_;
  Prepared p;
  p.output = case_file(work_dir_, index_, c.kind == CaseKind::kTrain ? "json" : "jsonl");
  if (!c.skip_reason.empty()) {
    p.where = hosts_.plan_only(c);
  } else {
    try {
      p.where = hosts_.prepare(suite_, c);
    } catch (const Error& e) {  // a cluster that cannot come up fails this case only
      p.hosts_error = e.what();
      p.where = hosts_.plan_only(c);
    }
  }
  PlanContext ctx = p.where.ctx;
  if (!binary.empty()) ctx.trainscope_binary = binary;
  p.plan = plan_case(suite_, c, ctx, p.output);
  return p;
}

RunOutcome CaseRunner::run(const SuiteCase& c, int rep, int64_t suite_id, const fs::path& binary) {
  if (c.replay_from.empty()) return run_resolved(c, rep, suite_id, binary);
  // A replay: its source's latest summary (training/run/replay.h).
  SuiteCase replay = c;
  if (const auto source = replay_sources_.find(c.replay_from); source != replay_sources_.end()) {
    replay.train.replay_compute = source->second.string();
    replay.given.insert("replay_compute");
  } else if (replay.skip_reason.empty()) {
    replay.skip_reason = fmt::format(
        "replay_from '{}': that case has not run successfully in this suite run", c.replay_from);
  }
  return run_resolved(replay, rep, suite_id, binary);
}

RunOutcome CaseRunner::run_resolved(const SuiteCase& c, int rep, int64_t suite_id,
                                    const fs::path& binary) {
  const Prepared p = prepare(c, binary);
  RunOutcome out;
  out.row.suite_id = suite_id;
  out.row.run_case = run_case_record(c, p.plan, rep, p.where);
  if (const std::string& skip = c.skip_reason.empty() ? p.where.skip_reason : c.skip_reason;
      !skip.empty()) {
    out.row.id = db_.mark_skipped(suite_id, out.row.run_case, skip);
    out.row.status = results::RunStatus::kSkipped;
    out.row.error = skip;
    std::fprintf(options_.progress, "  skipped: %s\n", skip.c_str());
    return out;
  }
  out.row.id = db_.begin_run(suite_id, out.row.run_case);
  if (!p.hosts_error.empty()) {  // recorded failed; the suite goes on
    out.row.status = results::RunStatus::kFailed;
    out.row.exit_code = kExitFailure;
    out.row.error = "its hosts could not be made ready: " + p.hosts_error;
    db_.finish_run(out.row.id, out.row.status, kExitFailure, out.row.error, nullptr);
    return out;
  }
  const double timeout_s = options_.timeout_s.value_or(c.timeout_s.value_or(plan_.timeout_s));
  const fs::path stderr_path = case_file(work_dir_, index_, "stderr");
  const auto start = Clock::now();
  const JobOutcome job = run_job(p.plan, case_file(work_dir_, index_, "stdout"), stderr_path,
                                 timeout_s, options_.poll_interval_s, signals_);
  out.seconds = seconds_since(start);
  db_.add_poller_samples(out.row.id, job.samples);
  record(out, job, ingest(c, job, p.output, stderr_path, timeout_s), stderr_path);
  out.interrupted = job.run.interrupted;
  keep_replay_source(c, out);
  return out;
}

// A training case's summary, kept for the cases that replay it.
void CaseRunner::keep_replay_source(const SuiteCase& c, const RunOutcome& out) {
  if (c.kind != CaseKind::kTrain || !c.replay_from.empty() || !out.summary ||
      out.row.status != results::RunStatus::kOk) {
    return;
  }
  const fs::path path = work_dir_.path() / fmt::format("replay-source-{}.json", index_);
  write_file_atomically(path, nlohmann::json(*out.summary).dump());
  replay_sources_[c.name] = path;
}

// The run's final state, in one finish_run transaction with its summary.
void CaseRunner::record(RunOutcome& out, const JobOutcome& job, Ingested in,
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

}  // namespace trainscope::suites
