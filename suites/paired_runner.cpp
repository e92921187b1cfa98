#include "suites/paired_runner.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "base/check.h"
#include "profiler/clock.h"
#include "profiler/stats.h"
#include "profiler/supervise.h"
#include "results/environment.h"
#include "results/results_db.h"
#include "suites/case_runner.h"

namespace trainscope::suites {
namespace {

namespace fs = std::filesystem;
using analysis::PairedVerdict;
using profiler::Clock;
using profiler::seconds_since;

constexpr double kVersionTimeoutS = 60;

// One case of the comparison as it goes.
struct OpenCase {
  const SuiteCase* c = nullptr;
  std::vector<results::ComparisonPair> pairs;
  std::vector<double> log_ratios;
  analysis::PairedDecision decision;
  std::string verdict;  // "" while open
  std::string note;
  double pair_seconds = 0;  // wall time of its pairs so far

  bool open() const { return verdict.empty(); }
  double seconds_per_pair() const { return pairs.empty() ? 0 : pair_seconds / pairs.size(); }
};

double median_ms(const std::vector<results::ComparisonPair>& pairs, bool head) {
  std::vector<double> v;
  for (const auto& p : pairs) v.push_back((head ? p.head_step_s : p.base_step_s) * 1e3);
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return profiler::percentile_sorted(v, 0.5);
}

void check_options(const PairedOptions& o) {
  if (!(o.threshold_pct > 0) || !std::isfinite(o.threshold_pct))
    throw Error(fmt::format("--threshold must be a positive percentage, got {}", o.threshold_pct));
  if (o.min_pairs < analysis::kMinPairsForInterval)
    throw Error(
        fmt::format("--min-pairs must be at least {} (fewer pairs give no 95% interval), "
                    "got {}",
                    analysis::kMinPairsForInterval, o.min_pairs));
  if (o.max_pairs < o.min_pairs)
    throw Error(fmt::format("--max-pairs ({}) must be at least --min-pairs ({})", o.max_pairs,
                            o.min_pairs));
  if (!(o.max_minutes > 0) || !std::isfinite(o.max_minutes))
    throw Error(fmt::format("--max-minutes must be positive, got {}", o.max_minutes));
}

class PairedRun {
 public:
  PairedRun(const Suite& suite, const PairedOptions& options, const SuitePlan& plan,
            results::BuildInfo base, results::BuildInfo head)
      : suite_(suite),
        options_(options),
        plan_(plan),
        seed_(options.runner.order_seed.value_or(std::random_device{}())),
        rng_(seed_),
        db_(results::ResultsDb::open_for_writing(options.runner.db_path)),
        runner_(suite, options.runner, plan, db_, signals_),
        base_(std::move(base)),
        head_(std::move(head)) {
    for (const SuiteCase* c : plan.cases) cases_.emplace_back().c = c;
  }

  PairedResult run();

 private:
  void begin();
  void run_pair(OpenCase& oc, int pair);
  bool out_of_time(const OpenCase& oc) const;
  void finish(PairedResult& result);
  void print_progress(const OpenCase& oc, int pair, const char* what);

  const Suite& suite_;
  const PairedOptions& options_;
  const SuitePlan& plan_;
  const uint64_t seed_;
  std::mt19937_64 rng_;
  results::ResultsDb db_;
  SignalGuard signals_{SignalPolicy::kRecordInterrupt};
  CaseRunner runner_;  // after db_ and signals_, which it uses
  results::BuildInfo base_, head_;
  std::vector<OpenCase> cases_;
  int64_t comparison_id_ = 0;
  int64_t base_suite_ = 0, head_suite_ = 0;
  Clock::time_point start_ = Clock::now();
};

// "7b1ef0587f01" from "trainscope 0.1.0 (git 7b1ef0587f01)"; else the whole line.
std::string revision_of(const std::string& version) {
  const size_t at = version.find("(git ");
  const size_t end = version.find(')', at);
  return at == std::string::npos || end == std::string::npos ? version
                                                             : version.substr(at + 5, end - at - 5);
}

void PairedRun::begin() {
  results::SuiteInfo info;
  info.name = suite_.name;
  info.definition = suite_.text;
  info.environment = results::capture_environment(options_.runner.command_line);
  info.host_facts = results::host_facts(info.environment);
  info.command_line = options_.runner.command_line;
  // Base first: the head is the database's latest suite, what report and
  // check read by default.
  info.git_revision = revision_of(base_.version);
  base_suite_ = db_.begin_suite(info);
  info.git_revision = revision_of(head_.version);
  head_suite_ = db_.begin_suite(info);
  results::ComparisonInfo c;
  c.kind = results::ComparisonKind::kPaired;
  c.suite = suite_.name;
  c.base_suite_id = base_suite_;
  c.head_suite_id = head_suite_;
  c.base = base_;
  c.head = head_;
  c.threshold_pct = options_.threshold_pct;
  c.seed = static_cast<int64_t>(seed_);
  c.min_pairs = options_.min_pairs;
  c.max_pairs = options_.max_pairs;
  c.max_minutes = options_.max_minutes;
  c.environment = info.environment;
  c.command_line = options_.runner.command_line;
  comparison_id_ = db_.begin_comparison(c);
  std::fprintf(options_.runner.progress,
               "trainscope compare %s: %zu case(s), pairs %d to %d a case, at most %g min, "
               "threshold %g%%, seed %llu; results in %s (comparison %lld)\n"
               "  base: %s (%s)\n  head: %s (%s)\n",
               suite_.name.c_str(), cases_.size(), options_.min_pairs, options_.max_pairs,
               options_.max_minutes, options_.threshold_pct, static_cast<unsigned long long>(seed_),
               options_.runner.db_path.c_str(), static_cast<long long>(comparison_id_),
               base_.binary.c_str(), base_.version.c_str(), head_.binary.c_str(),
               head_.version.c_str());
  std::fflush(options_.runner.progress);
}

PairedResult PairedRun::run() {
  begin();
  for (int pair = 0; pair < options_.max_pairs && !signals_.interrupted(); ++pair) {
    std::vector<OpenCase*> round;
    for (OpenCase& oc : cases_)
      if (oc.open()) round.push_back(&oc);
    if (round.empty()) break;
    std::shuffle(round.begin(), round.end(), rng_);
    bool capped = false;
    for (OpenCase* oc : round) {
      if (signals_.interrupted()) break;
      if (out_of_time(*oc)) {
        capped = true;
        break;
      }
      run_pair(*oc, pair);
    }
    if (capped) break;
  }
  PairedResult result;
  finish(result);
  return result;
}

// Whether the next pair of `oc` would end after the cap on minutes.
bool PairedRun::out_of_time(const OpenCase& oc) const {
  return seconds_since(start_) + oc.seconds_per_pair() > options_.max_minutes * 60;
}

void PairedRun::print_progress(const OpenCase& oc, int pair, const char* what) {
  std::fprintf(options_.runner.progress, "[pair %d of %d] %s: %s  elapsed %.0fs of %.0fs\n",
               pair + 1, options_.max_pairs, oc.c->name.c_str(), what, seconds_since(start_),
               options_.max_minutes * 60);
  std::fflush(options_.runner.progress);
}

void PairedRun::run_pair(OpenCase& oc, int pair) {
  const bool head_first = std::bernoulli_distribution(0.5)(rng_);
  print_progress(oc, pair, head_first ? "head, then base" : "base, then head");
  const auto start = Clock::now();
  RunOutcome runs[2];  // [0] base, [1] head
  for (int i = 0; i < 2 && !signals_.interrupted(); ++i) {
    const bool head = (i == 0) == head_first;
    runs[head] = runner_.run(*oc.c, pair, head ? head_suite_ : base_suite_,
                             head ? head_.binary : base_.binary);
    const RunOutcome& r = runs[head];
    if (r.interrupted || r.row.status == results::RunStatus::kOk) continue;
    oc.verdict = r.row.status == results::RunStatus::kSkipped ? "SKIPPED" : "FAILED";
    oc.note = r.row.status == results::RunStatus::kSkipped
                  ? r.row.error
                  : fmt::format("the {} run failed: {}", head ? "head" : "base", r.row.error);
    return;
  }
  if (signals_.interrupted()) return;
  oc.pair_seconds += seconds_since(start);
  results::ComparisonPair p{.case_name = oc.c->name,
                            .pair = pair,
                            .head_first = head_first,
                            .base_run_id = runs[0].row.id,
                            .head_run_id = runs[1].row.id,
                            .base_step_s = runs[0].figures.step_median_s,
                            .head_step_s = runs[1].figures.step_median_s};
  if (!(p.base_step_s > 0) || !(p.head_step_s > 0)) {
    oc.verdict = "FAILED";
    oc.note = "a run reported no step time (too few steps after its warm-up?)";
    return;
  }
  db_.add_comparison_pair(comparison_id_, p);
  oc.pairs.push_back(p);
  oc.log_ratios.push_back(std::log(p.head_step_s / p.base_step_s));
  oc.decision = analysis::decide_pairs(oc.log_ratios, options_.threshold_pct, options_.min_pairs);
  if (oc.decision.verdict != analysis::PairedVerdict::kUndecided)
    oc.verdict = std::string(analysis::paired_verdict_name(oc.decision.verdict));
  std::fprintf(options_.runner.progress, "  base %.1f ms, head %.1f ms: so far %s%s\n",
               p.base_step_s * 1e3, p.head_step_s * 1e3,
               analysis::format_ratio(oc.decision.ratio).c_str(),
               oc.verdict.empty() ? "" : fmt::format(", {}", oc.verdict).c_str());
}

void PairedRun::finish(PairedResult& result) {
  const bool interrupted = signals_.interrupted();
  int counts[4] = {};  // failed, regression, inconclusive, pass
  std::vector<results::ComparisonCase> rows;
  for (OpenCase& oc : cases_) {
    if (oc.open() && !interrupted) {
      oc.decision = analysis::decide_pairs(oc.log_ratios, options_.threshold_pct,
                                           options_.min_pairs, /*at_cap=*/true);
      oc.verdict = std::string(analysis::paired_verdict_name(oc.decision.verdict));
    }
    const analysis::Interval& iv = oc.decision.ratio;
    rows.push_back({.case_name = oc.c->name,
                    .pairs = static_cast<int>(oc.pairs.size()),
                    .ratio = iv.estimate,
                    .low = iv.low,
                    .high = iv.high,
                    .level = iv.level,
                    .verdict = oc.open() ? "INTERRUPTED" : oc.verdict,
                    .pairs_needed = oc.decision.pairs_needed,
                    .note = oc.note});
    counts[0] += oc.verdict == "FAILED";
    counts[1] += oc.verdict == "REGRESSION";
    counts[2] += oc.verdict == "INCONCLUSIVE";
    counts[3] += oc.verdict == "PASS";
  }
  result.verdict = interrupted     ? "INTERRUPTED"
                   : counts[0] > 0 ? "FAILED"
                   : counts[1] > 0 ? "REGRESSION"
                   : counts[2] > 0 ? "INCONCLUSIVE"
                   : counts[3] > 0 ? "PASS"
                                   : "INCONCLUSIVE";  // every case skipped: nothing compared
  db_.finish_comparison(comparison_id_, result.verdict, rows);
  db_.finish_suite(base_suite_);
  db_.finish_suite(head_suite_);
  result.comparison_id = comparison_id_;
  result.seconds = seconds_since(start_);
  std::vector<std::string> names;
  for (const OpenCase& oc : cases_) names.push_back(oc.c->name);
  const int width = result_name_width(names, 1);
  std::FILE* out = options_.runner.out;
  std::fputs(format_paired_header(width).c_str(), out);
  for (size_t i = 0; i < rows.size(); ++i) {
    std::fputs(format_paired_row(rows[i], median_ms(cases_[i].pairs, false),
                                 median_ms(cases_[i].pairs, true), width)
                   .c_str(),
               out);
  }
  int pairs = 0;
  for (const auto& r : rows) pairs += r.pairs;
  std::fprintf(out, "# verdict: %s (%zu case(s), %d pairs in %.0f s; threshold %g%%, seed %llu)\n",
               result.verdict.c_str(), rows.size(), pairs, result.seconds, options_.threshold_pct,
               static_cast<unsigned long long>(seed_));
  std::fflush(out);
  result.cases = std::move(rows);
}

}  // namespace

int PairedResult::exit_code() const {
  if (verdict == "INTERRUPTED") return 130;
  if (verdict == "PASS") return kExitOk;
  if (verdict == "INCONCLUSIVE") return kExitInconclusive;
  return kExitFailure;
}

std::string binary_version(const fs::path& binary) {
  SpawnOptions spawn;
  spawn.argv = {binary.string(), "version"};
  const profiler::CompletedRun run = profiler::run_to_completion(spawn, kVersionTimeoutS);
  const std::string first = run.out.substr(0, run.out.find('\n'));
  if (run.exit_code != 0 || run.timed_out || first.empty()) {
    std::string err = run.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    throw Error(fmt::format("{} version: {}{}", binary.string(),
                            run.timed_out        ? "timed out"
                            : run.exit_code != 0 ? fmt::format("exit {}", run.exit_code)
                                                 : std::string("printed nothing"),
                            err.empty() ? "" : ": " + err.substr(0, 300)));
  }
  return first;
}

PairedResult run_paired(const Suite& suite, const PairedOptions& options) {
  check_options(options);
  const std::string base_binary = resolve_executable(options.base_binary.string(), "--base");
  const std::string head_binary = resolve_executable(options.head_binary.string(), "--head");
  // Before the database is opened: a binary that cannot run is bad input.
  results::BuildInfo base{.binary = base_binary, .version = binary_version(base_binary)};
  results::BuildInfo head{.binary = head_binary, .version = binary_version(head_binary)};
  PairedOptions o = options;
  o.runner.trainscope_binary = head_binary;
  o.runner.measure_limits = false;
  o.runner.repeat = 1;
  const SuitePlan plan = plan_suite(suite, o.runner);
  return PairedRun(suite, o, plan, std::move(base), std::move(head)).run();
}

namespace {
constexpr const char* kPairedRow = "{:<{}} {:>5} {:>9} {:>9}  {:<26} {:<12} {}\n";
}  // namespace

std::string format_paired_header(int name_width) {
  return fmt::format(fmt::runtime(kPairedRow), "# case", name_width, "pairs", "base_ms", "head_ms",
                     "head/base [95%]", "verdict", "note");
}

std::string format_paired_row(const results::ComparisonCase& c, double base_ms, double head_ms,
                              int name_width) {
  analysis::Interval iv;
  iv.estimate = c.ratio;
  iv.low = c.low;
  iv.high = c.high;
  std::string note = c.note;
  if (c.verdict == "INCONCLUSIVE" && c.pairs_needed > 0) {
    note = fmt::format("needs about {} pairs to decide", c.pairs_needed);
  }
  const auto ms = [](double v) { return std::isfinite(v) ? fmt::format("{:.1f}", v) : "-"; };
  return fmt::format(fmt::runtime(kPairedRow), c.case_name, name_width, c.pairs, ms(base_ms),
                     ms(head_ms), c.pairs > 0 ? analysis::format_ratio(iv) : "-", c.verdict, note);
}

}  // namespace trainscope::suites
