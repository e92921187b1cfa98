#include "check/baseline.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "base/atomic_file.h"
#include "base/check.h"
#include "base/json_reader.h"
#include "base/format.h"
#include "results/records.h"
#include "results/results_db.h"

namespace trainscope::check {

namespace {

using nlohmann::json;
using results::kNaN;

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

json canonical_config(const results::RunCase& c) {
  return json{{"mode", c.mode},
              {"reduction", c.reduction},
              {"bucket_mb", c.bucket_mb ? json(*c.bucket_mb) : json(nullptr)},
              {"world_size", c.world_size},
              {"threads", c.threads},
              {"links", c.links},
              {"config", c.config}};
}

}  // namespace

// ---- Ratio rules ----

std::string RatioRule::text() const {
  return fmt::format("{}:{}/{}{}{}", metric, numerator, denominator, at_most ? "<=" : ">=", bound);
}

RatioRule parse_ratio_rule(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return Error(
        fmt::format("ratio rule '{}': {} (expected [step_time|tokens_per_s:]CASE_A/"
                    "CASE_B<=BOUND or >=BOUND, e.g. \"fused/per-tensor<=1.10\")",
                    text, why));
  };
  RatioRule rule;
  std::string_view rest = text;
  auto op = rest.find("<=");
  rule.at_most = op != std::string_view::npos;
  if (!rule.at_most) op = rest.find(">=");
  if (op == std::string_view::npos) throw bad("no '<=' or '>='");
  const std::string bound = trim(rest.substr(op + 2));
  double value = 0;
  auto [end, ec] = std::from_chars(bound.data(), bound.data() + bound.size(), value);
  if (bound.empty() || ec != std::errc() || end != bound.data() + bound.size() ||
      !std::isfinite(value) || value <= 0) {
    throw bad("the bound must be a positive number");
  }
  rule.bound = value;
  const std::string lhs_text = trim(rest.substr(0, op));
  std::string_view lhs = lhs_text;
  for (std::string_view metric : {"step_time:", "tokens_per_s:"}) {
    if (lhs.starts_with(metric)) {
      rule.metric = std::string(metric.substr(0, metric.size() - 1));
      lhs.remove_prefix(metric.size());
    }
  }
  const auto slash = lhs.rfind('/');
  if (slash == std::string_view::npos) throw bad("no '/' between the two case names");
  rule.numerator = trim(lhs.substr(0, slash));
  rule.denominator = trim(lhs.substr(slash + 1));
  if (rule.numerator.empty() || rule.denominator.empty()) throw bad("a case name is empty");
  if (rule.numerator.find(':') != std::string::npos) {
    throw bad("unknown metric (step_time or tokens_per_s)");
  }
  return rule;
}

}  // namespace trainscope::check

void trainscope::results::JsonCodec<trainscope::check::RatioRule>::read(const JsonReader& r,
                                                                        check::RatioRule& rule) {
  try {
    rule = check::parse_ratio_rule(r.get<std::string>());
  } catch (const Error& e) {
    r.fail(e.what());
  }
}

namespace trainscope::check {

// ---- Extraction ----

const CaseRecord* CheckSuite::find(std::string_view case_name) const {
  for (const auto& c : cases) {
    if (c.name == case_name) return &c;
  }
  return nullptr;
}

namespace {

BusbwSamples& samples_of_size(std::vector<BusbwSamples>& sweep, int64_t size_bytes) {
  for (auto& s : sweep) {
    if (s.size_bytes == size_bytes) return s;
  }
  BusbwSamples& added = sweep.emplace_back();
  added.size_bytes = size_bytes;
  return added;
}

// An all-reduce sweep case: its usable runs ended ok with rows (a sweep
// writes no run summary); their busbw per size.
void extract_sweep(const analysis::CaseData& c, CaseRecord& rec) {
  size_t usable = 0;
  for (const auto& run : c.runs) {
    if (run.row.status != results::RunStatus::kOk || run.allreduce.empty()) continue;
    ++usable;
    for (const auto& row : run.allreduce) {
      BusbwSamples& s = samples_of_size(rec.timings.busbw, row.size_bytes);
      s.per_repetition.push_back(row.busbw_gbps);
      for (double busbw : results::call_busbw_gbps(row)) s.per_call.push_back(busbw);
    }
  }
  if (usable == c.runs.size()) {
    rec.status = "ok";
    rec.reason.clear();
  } else if (usable > 0) {
    rec.status = "partial";
    rec.reason =
        fmt::format("{} of {} repetitions not usable", c.runs.size() - usable, c.runs.size());
  } else if (rec.status == "ok") {
    rec.status = "failed";
    rec.reason = "no sweep rows";
  }
}

}  // namespace

namespace {
// Every distinct KernelInfo::label() over the runs' ranks, sorted (so the
// same kernels compare equal whatever order the ranks reported them in).
std::string case_kernels(const std::vector<const analysis::RunData*>& runs) {
  std::set<std::string> seen;
  for (const analysis::RunData* r : runs) {
    for (const auto& rank : r->summary->ranks) {
      if (!rank.kernels.blas_core.empty()) seen.insert(rank.kernels.label());
    }
  }
  return fmt::format("{}", fmt::join(seen, ", "));
}
}  // namespace

CheckSuite extract_check_suite(const analysis::SuiteData& suite) {
  CheckSuite out;
  out.name = suite.suite.info.name;
  out.source = fmt::format("{} suite {}", suite.db_path, suite.suite.id);
  out.suite_id = suite.suite.id;
  const auto& facts = suite.suite.info.host_facts;
  for (const char* key : {"hostname", "cpu_model", "cores"}) {
    if (facts.contains(key)) out.machine[key] = facts[key];
  }
  for (const auto& c : suite.cases) {
    CaseRecord rec;
    rec.name = c.name;
    rec.config = canonical_config(c.run_case);
    auto fig = analysis::case_figures(c);
    rec.status = fig.status;
    rec.reason = fig.reason;
    if (fig.loaded > 0) {
      rec.loaded =
          fmt::format("{} of {} usable repetition(s): {}", fig.loaded, fig.usable, fig.load.loaded);
    }
    if (c.run_case.mode == "allreduce") extract_sweep(c, rec);  // the runner's mode of sweeps
    auto runs = c.usable_runs();
    rec.kernels = case_kernels(runs);
    for (const analysis::RunData* r : runs) {
      const auto& s = *r->summary;
      rec.timings.step_time_median_s.push_back(s.totals.step_time_median_s);
      rec.timings.tokens_per_s.push_back(s.totals.tokens_per_s);
      if (!s.steps.empty()) {
        for (const auto& step : results::measured_steps(s, s.steps.front())) {
          rec.timings.step_times_s.push_back(step.step_time_s);
        }
      }
    }
    if (!runs.empty()) {
      const auto& s = *runs.front()->summary;
      auto& counters = rec.deterministic.counters;
      for (const auto& r : s.ranks) {
        for (size_t i = 0; i < kernels::kMemoryCategoryNames.size(); ++i) {
          counters[fmt::format("tracked.{}", kernels::kMemoryCategoryNames[i])].push_back(
              r.tracked_peak_by_category.values[i]);
        }
        counters["tracked.total"].push_back(r.tracked_peak_total);
        counters["comm.calls"].push_back(r.comm.calls);
        counters["comm.bytes"].push_back(r.comm.bytes);
      }
      if (!s.steps.empty()) {
        for (const auto& st : s.steps.front()) rec.deterministic.train_loss.push_back(st.loss);
      }
      for (const auto& v : s.val) rec.deterministic.val_loss.push_back(v.loss);
    }
    out.cases.push_back(std::move(rec));
  }
  return out;
}

// ---- Baseline files ----

json baseline_to_json(const CheckSuite& suite) {
  json j = results::to_json_value(suite);
  j["schema"] = fmt::format("{}{}", kBaselineSchemaPrefix, kBaselineSchemaVersion);
  return j;
}

namespace {

// The version of a baseline's schema tag; Error when it is not one this
// trainscope reads.
void check_baseline_schema(const JsonReader& r) {
  const std::string schema = r["schema"].get<std::string>();
  if (!schema.starts_with(kBaselineSchemaPrefix)) {
    throw Error(fmt::format("not a trainscope baseline (schema '{}', expected '{}{}')", schema,
                            kBaselineSchemaPrefix, kBaselineSchemaVersion));
  }
  int version = 0;
  const std::string v = schema.substr(kBaselineSchemaPrefix.size());
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), version);
  if (ec != std::errc() || end != v.data() + v.size()) {
    throw Error(fmt::format("unreadable baseline schema '{}'", schema));
  }
  if (version > kBaselineSchemaVersion) {
    throw Error(
        fmt::format("baseline schema '{}' is newer than this trainscope reads "
                    "('{}{}'); use a newer trainscope or re-create the baseline with "
                    "this one (trainscope check --save-baseline)",
                    schema, kBaselineSchemaPrefix, kBaselineSchemaVersion));
  }
  if (version < 1) throw Error(fmt::format("unknown baseline schema '{}'", schema));
}

}  // namespace

CheckSuite baseline_from_json(const json& j, const std::string& where) {
  CheckSuite out;
  JsonReader::rethrow_in(where, [&] {
    const JsonReader r(j);
    r.require_object();
    check_baseline_schema(r);
    results::from_json_value(r, out);
  });
  out.source = where;
  return out;
}

}  // namespace trainscope::check

namespace trainscope::results {

void Fields<check::CheckSuite>::validate(const check::CheckSuite& suite, const JsonReader& r) {
  if (suite.threshold_pct && !(std::isfinite(*suite.threshold_pct) && *suite.threshold_pct >= 0)) {
    r["threshold_pct"].fail(
        fmt::format("is {}, expected a percentage of 0 or more (how much slower a timing may get)",
                    *suite.threshold_pct));
  }
}

}  // namespace trainscope::results

namespace trainscope::check {

void save_baseline(const CheckSuite& suite, const std::filesystem::path& path) {
  write_file_atomically(path, baseline_to_json(suite).dump(2) + "\n");
}

CheckSuite load_baseline(const std::filesystem::path& path) {
  return baseline_from_json(read_json_file(path), path.string());
}

CheckSuite load_check_suite(const std::filesystem::path& db_path, std::string_view selector) {
  auto db = results::ResultsDb::open_for_reading(db_path);
  return extract_check_suite(analysis::load_suite(db, analysis::resolve_suite(db, selector)));
}

CheckSuite load_baseline_any(const std::filesystem::path& path, std::string_view selector,
                             const std::string& suite_name, const std::filesystem::path& current_db,
                             int64_t current_suite_id) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open the baseline", path.string()));
  char header[16] = {};
  in.read(header, sizeof header);
  if (std::string_view(header, static_cast<size_t>(in.gcount())) !=
      std::string_view("SQLite format 3\0", 16)) {
    return load_baseline(path);
  }
  auto db = results::ResultsDb::open_for_reading(path);
  if (selector != "latest")
    return extract_check_suite(analysis::load_suite(db, analysis::resolve_suite(db, selector)));
  std::error_code ec;
  const bool same_file = std::filesystem::equivalent(path, current_db, ec);
  for (const auto& s : db.list_suites()) {  // latest first
    if (s.info.name != suite_name) continue;
    if (same_file && s.id == current_suite_id) continue;
    return extract_check_suite(analysis::load_suite(db, s.id));
  }
  throw Error(fmt::format("{}: no {}suite named '{}' to use as the baseline", path.string(),
                          same_file ? "earlier " : "", suite_name));
}

}  // namespace trainscope::check
