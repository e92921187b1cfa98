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
#include "suites/case_runner.h"
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
        cases_(suite, options, plan, db_, signals_) {}

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
  void print_progress(const SuiteCase& c, int rep);
  void print_row(const RunOutcome& out);
  void finish();

  const Suite& suite_;
  const RunnerOptions& options_;
  const SuitePlan& plan_;
  const int name_width_ = result_name_width(case_names(plan_), plan_.repetitions);
  const uint64_t order_seed_ = options_.order_seed.value_or(std::random_device{}());
  results::ResultsDb db_;
  SignalGuard signals_{SignalPolicy::kRecordInterrupt};
  CaseRunner cases_;  // after db_ and signals_, which it uses
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
    info.environment["run_order"] = {
        {"rounds", plan_.repetitions}, {"shuffled", true}, {"seed", order_seed_}};
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
      measure_suite_limits(suite_, plan_.cases, plan_.ctx, cases_.work_dir(), options_.progress);
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

RunOutcome SuiteRun::run_case(const SuiteCase& c, int rep) {
  ++index_;
  print_progress(c, rep);
  const auto start = Clock::now();
  RunOutcome out = cases_.run(c, rep, result_.suite_id);
  if (out.interrupted) {
    result_.interrupted = true;
  } else if (out.row.status != results::RunStatus::kSkipped) {
    ++measured_;
    measured_seconds_ += seconds_since(start);
  }
  return out;
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

SuiteResult run_suite(const Suite& suite, const RunnerOptions& options) {
  const SuitePlan plan = plan_suite(suite, options);
  if (options.dry_run) {
    CaseHostProvider hosts(plan.ctx, options.cluster, fs::temp_directory_path(), options.progress);
    return print_dry_run(suite, plan, hosts, options.out);
  }
  return SuiteRun(suite, options, plan).run();
}

}  // namespace trainscope::suites
