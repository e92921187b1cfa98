#include "check/regression_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "base/check.h"
#include "analysis/intervals.h"
#include "check/timing_rows.h"
#include "base/format.h"

namespace trainscope::check {

namespace {

using nlohmann::json;
using results::kNaN;

// ---- Comparison helpers ----

std::string signed_percent(double base, double cur) {
  if (!(base != 0) || !std::isfinite(base) || !std::isfinite(cur)) return "-";
  return fmt::format("{:+.1f}%", (cur - base) / std::fabs(base) * 100);
}

std::string join_ints(const std::vector<int>& v) { return fmt::format("{}", fmt::join(v, ",")); }

// Either side measured on a loaded machine: its timings may be the machine's.
// `baseline_timings`: whether the baseline's timings are compared (else only
// the current run's, in ratio rules, matter).
void warn_about_load(const CaseRecord& b, const CaseRecord& c, bool baseline_timings,
                     std::vector<std::string>& warnings) {
  for (const auto& [side, record] : {std::pair{"baseline", &b}, std::pair{"current run", &c}}) {
    if (record->loaded.empty() || (record == &b && !baseline_timings)) continue;
    warnings.push_back(
        fmt::format("case {}: the {} was measured on a loaded machine ({}); its "
                    "timings may be the machine's, not the code's",
                    c.name, side, record->loaded));
  }
}

void compare_counters(const CaseRecord& b, const CaseRecord& c, std::vector<CheckRow>& rows) {
  for (const auto& [name, base] : b.deterministic.counters) {
    auto it = c.deterministic.counters.find(name);
    CheckRow row;
    row.case_name = c.name;
    row.metric = name;
    int64_t sb = 0, sc = 0;
    for (auto v : base) sb += v;
    row.baseline = std::to_string(sb);
    if (it == c.deterministic.counters.end()) {
      row.current = "-";
      row.verdict = Verdict::kRegression;
      row.note = "missing in the current run";
      rows.push_back(std::move(row));
      continue;
    }
    const auto& cur = it->second;
    for (auto v : cur) sc += v;
    row.current = std::to_string(sc);
    row.change = signed_percent(static_cast<double>(sb), static_cast<double>(sc));
    if (cur.size() != base.size()) {
      row.verdict = Verdict::kRegression;
      row.note = fmt::format("{} ranks vs {}", cur.size(), base.size());
      rows.push_back(std::move(row));
      continue;
    }
    std::vector<int> more, less;
    for (size_t r = 0; r < base.size(); ++r) {
      if (cur[r] > base[r]) more.push_back(static_cast<int>(r));
      if (cur[r] < base[r]) less.push_back(static_cast<int>(r));
    }
    if (!more.empty()) {
      row.verdict = Verdict::kRegression;
      row.note = "exact; higher on rank(s) " + join_ints(more);
    } else if (!less.empty()) {
      row.verdict = Verdict::kImproved;
      row.note = "exact; lower on rank(s) " + join_ints(less) + ": refresh the baseline";
    } else {
      row.note = "exact";
    }
    rows.push_back(std::move(row));
  }
}

void compare_losses(const std::string& case_name, const std::string& metric,
                    const std::vector<double>& base, const std::vector<double>& cur, double tol,
                    std::vector<CheckRow>& rows) {
  if (base.empty() && cur.empty()) return;
  CheckRow row;
  row.case_name = case_name;
  row.metric = metric;
  row.baseline = base.empty() ? "-" : format_number(base.back(), 6);
  row.current = cur.empty() ? "-" : format_number(cur.back(), 6);
  if (!base.empty() && !cur.empty()) row.change = signed_percent(base.back(), cur.back());
  if (base.size() != cur.size()) {
    row.verdict = Verdict::kRegression;
    row.note = fmt::format("{} values vs {} in the baseline", cur.size(), base.size());
    rows.push_back(std::move(row));
    return;
  }
  double worst = 0;
  size_t worst_at = 0;
  bool nan_mismatch = false;
  for (size_t i = 0; i < base.size(); ++i) {
    if (std::isnan(base[i]) != std::isnan(cur[i])) {
      nan_mismatch = true;
      worst_at = i;
      break;
    }
    if (std::isnan(base[i])) continue;
    const double rel = std::fabs(cur[i] - base[i]) / std::max(1.0, std::fabs(base[i]));
    if (rel > worst) {
      worst = rel;
      worst_at = i;
    }
  }
  if (nan_mismatch) {
    row.verdict = Verdict::kRegression;
    row.note = fmt::format("NaN in one side only at index {}", worst_at);
  } else if (worst > tol) {
    row.verdict = Verdict::kRegression;
    row.note = fmt::format("differs at index {}: {:.6g} vs {:.6g} (relative {:.2g} > {:.2g})",
                           worst_at, cur[worst_at], base[worst_at], worst, tol);
  } else {
    row.note = fmt::format("{} values within {:.2g}", base.size(), tol);
  }
  rows.push_back(std::move(row));
}

// First JSON-pointer path where a and b differ, e.g. "/config/batch".
// A difference inside a list names the list: an element's own path can be
// absent on both sides ("/extra_args/-", an element appended).
std::string first_difference(const json& a, const json& b) {
  json patch = json::diff(a, b);
  if (patch.empty()) return "";
  const std::string path = patch.front().value("path", std::string("/"));
  const json::json_pointer pointer(path);
  if (pointer.empty()) return path;
  const json::json_pointer parent = pointer.parent_pointer();
  const auto is_list = [&](const json& j) { return j.contains(parent) && j.at(parent).is_array(); };
  return is_list(a) || is_list(b) ? parent.to_string() : path;
}

// A configuration as it compares between checkouts: a model file or checkpoint
// is named by its file name, not the directory it was read from. A baseline
// saved in one clone is checked in another (CI checks out elsewhere); what
// the file holds shows in the exact figures (parameter bytes, losses).
json portable_config(const json& config) {
  if (config.is_array()) {
    json out = json::array();
    for (const json& e : config) out.push_back(portable_config(e));
    return out;
  }
  if (!config.is_object()) return config;
  json out = json::object();
  for (const auto& [key, value] : config.items()) {
    const bool is_path = (key == "model" || key == "init_from") && value.is_string() &&
                         value.get<std::string>().find('/') != std::string::npos;
    out[key] = is_path ? json(std::filesystem::path(value.get<std::string>()).filename().string())
                       : portable_config(value);
  }
  return out;
}

std::string pointer_value(const json& j, const std::string& pointer) {
  json::json_pointer p(pointer);
  return j.contains(p) ? j.at(p).dump() : "(absent)";
}

// One figure per usable repetition: the unit a ratio's interval is made of.
const std::vector<double>& ratio_samples(const CaseRecord& c, const std::string& metric) {
  return metric == "tokens_per_s" ? c.timings.tokens_per_s : c.timings.step_time_median_s;
}

void check_ratio(const RatioRule& rule, const CheckSuite& current, std::vector<CheckRow>& rows) {
  const CaseRecord* num = current.find(rule.numerator);
  const CaseRecord* den = current.find(rule.denominator);
  for (auto [ptr, name] : {std::pair{num, rule.numerator}, std::pair{den, rule.denominator}}) {
    if (!ptr) {
      throw Error(fmt::format("ratio rule '{}': suite '{}' ({}) has no case '{}'", rule.text(),
                              current.name, current.source, name));
    }
  }
  CheckRow row;
  row.case_name = rule.numerator + "/" + rule.denominator;
  row.metric = "ratio of " + rule.metric;
  row.baseline = std::string(rule.at_most ? "<= " : ">= ") + format_number(rule.bound, 3);
  if (!num->usable() || !den->usable()) {
    row.current = "-";
    row.verdict = Verdict::kRegression;
    row.note = fmt::format("case '{}' has no usable run", num->usable() ? den->name : num->name);
    rows.push_back(std::move(row));
    return;
  }
  const std::vector<double>& a = ratio_samples(*num, rule.metric);
  const std::vector<double>& b = ratio_samples(*den, rule.metric);
  const analysis::Interval ratio = analysis::bootstrap_ratio_of_medians(a, b);
  row.current = format_number(ratio.estimate, 3);
  if (ratio.has_interval()) {
    row.change = fmt::format("[{}, {}]", format_number(ratio.low, 3), format_number(ratio.high, 3));
  }
  const double r = ratio.estimate;
  const bool ok = std::isfinite(r) && (rule.at_most ? r <= rule.bound : r >= rule.bound);
  row.verdict = ok ? Verdict::kSame : Verdict::kRegression;
  row.note = fmt::format("medians {:.6g} / {:.6g} over {} / {} repetitions{}",
                         results::median_of(a), results::median_of(b), a.size(), b.size(),
                         ratio.has_interval() ? "; change column: 95% bootstrap interval"
                                              : ": one repetition, no interval");
  rows.push_back(std::move(row));
}

}  // namespace

// ---- The check ----

int CheckResult::regressions() const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [](const CheckRow& r) {
    return r.verdict == Verdict::kRegression;
  }));
}

int CheckResult::inconclusive() const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [](const CheckRow& r) {
    return r.verdict == Verdict::kInconclusive;
  }));
}

namespace {

// Every baseline case is in the current suite with the same configuration.
void check_configurations_match(const CheckSuite& baseline, const CheckSuite& current) {
  for (const auto& b : baseline.cases) {
    const CaseRecord* c = current.find(b.name);
    if (!c) {
      throw Error(
          fmt::format("case '{}' of suite '{}' is in the baseline ({}) but not in the "
                      "current suite ({})",
                      b.name, current.name, baseline.source, current.source));
    }
    const json base_config = portable_config(b.config);
    const json current_config = portable_config(c->config);
    const std::string diff = first_difference(base_config, current_config);
    if (!diff.empty()) {
      throw Error(
          fmt::format("case '{}' of suite '{}': configuration differs from the baseline "
                      "at '{}': baseline {}, current {} (re-create the baseline for a "
                      "new configuration)",
                      b.name, current.name, diff, pointer_value(base_config, diff),
                      pointer_value(current_config, diff)));
    }
  }
}

std::string describe_machine(const nlohmann::json& machine) {
  if (machine.empty()) return "unknown";
  return fmt::format("{}, {} x {} cores", machine.value("hostname", "?"),
                     machine.value("cpu_model", "?"), machine.value("cores", json(0)).dump());
}

// A calibrated baseline (check calibrate) says how many repetitions a side
// the gate needs on its machine; a current run with fewer is told so.
void warn_about_repetitions(const CheckSuite& baseline, const CheckSuite& current,
                            CheckResult& result) {
  for (const auto& c : current.cases) {
    const auto n = static_cast<int64_t>(c.timings.step_time_median_s.size());
    if (!c.usable() || c.timings.step_time_median_s.empty() || n >= *baseline.repetitions) {
      continue;
    }
    result.warnings.push_back(fmt::format(
        "case {}: {} repetition(s), but the baseline's calibration asks for {} a side at "
        "threshold {:g}% on this machine (suite run --repeat {})",
        c.name, n, *baseline.repetitions, result.threshold_pct, *baseline.repetitions));
  }
}

// The rows of one case present on both sides.
void compare_case(const CaseRecord& b, const CaseRecord& c, bool timings,
                  const CheckOptions& options, CheckResult& result) {
  if (!b.usable()) {
    result.rows.push_back({c.name, "status", b.status, c.status, "", "", Verdict::kInfo,
                           "not usable in the baseline: not compared", ""});
    return;
  }
  if (!c.usable()) {
    result.rows.push_back(
        {c.name, "status", b.status, c.status, "", "", Verdict::kRegression, c.reason, ""});
    return;
  }
  if (timings && !b.kernels.empty() && !c.kernels.empty() && b.kernels != c.kernels) {
    const std::string what = fmt::format(
        "case {}: the baseline ran GEMM kernels {}, the current "
        "run {}",
        c.name, b.kernels, c.kernels);
    if (!options.allow_kernel_change) {
      throw Error(what +
                  ": their timings measure the kernels, not the code (unset or set "
                  "OPENBLAS_CORETYPE as the baseline had it, or --allow-kernel-change)");
    }
    result.warnings.push_back(what + ": timings compared anyway (--allow-kernel-change)");
  }
  if (timings && b.timings.busbw.empty()) compare_step_timings(b, c, options, result.rows);
  if (timings && !b.timings.busbw.empty()) compare_sweep_busbw(b, c, options, result.rows);
  compare_counters(b, c, result.rows);
  compare_losses(c.name, "train loss", b.deterministic.train_loss, c.deterministic.train_loss,
                 options.loss_rel_tol, result.rows);
  compare_losses(c.name, "val loss", b.deterministic.val_loss, c.deterministic.val_loss,
                 options.loss_rel_tol, result.rows);
  warn_about_load(b, c, timings, result.warnings);
}

}  // namespace

CheckResult run_check(const CheckSuite* baseline, const CheckSuite& current,
                      const CheckOptions& given) {
  CheckOptions options = given;
  if (!options.threshold_pct) {
    options.threshold_pct =
        baseline && baseline->threshold_pct ? *baseline->threshold_pct : kDefaultThresholdPct;
  }
  CheckResult result;
  result.suite = current.name;
  result.threshold_pct = *options.threshold_pct;
  result.alpha = options.alpha;
  result.current_source = current.source;
  if (current.cases.empty()) {
    throw Error(fmt::format("suite '{}' ({}) has no cases: nothing to check", current.name,
                            current.source));
  }
  std::vector<RatioRule> ratios = options.ratios;
  if (baseline) {
    result.baseline_source = baseline->source;
    if (baseline->name != current.name) {
      throw Error(fmt::format("the baseline ({}) is suite '{}' but the current suite ({}) is '{}'",
                              baseline->source, baseline->name, current.source, current.name));
    }
    if (baseline->cases.empty()) {
      throw Error(
          fmt::format("baseline suite '{}' ({}) has no cases", baseline->name, baseline->source));
    }
    check_configurations_match(*baseline, current);
    const bool same_machine = !baseline->machine.empty() && baseline->machine == current.machine;
    const bool timings = !options.exact_only && (same_machine || options.timings_across_machines);
    if (options.exact_only) {
      result.warnings.push_back(
          "timings not compared (--exact-only): exact figures and ratio rules only; the speed "
          "gate compares step times, paired (trainscope compare)");
    } else if (!timings) {
      result.warnings.push_back(fmt::format(
          "timings not compared: {}; only ratio rules within the run and exact figures are "
          "checked (--timings-across-machines compares them anyway)",
          baseline->machine.empty()
              ? "the baseline records no machine (save it again with --save-baseline on the "
                "machine that runs the check)"
              : fmt::format("the baseline was measured on another machine ({} vs {})",
                            describe_machine(baseline->machine),
                            describe_machine(current.machine))));
    }
    for (const auto& b : baseline->cases)
      compare_case(b, *current.find(b.name), timings, options, result);
    if (timings && baseline->repetitions) warn_about_repetitions(*baseline, current, result);
    for (const auto& c : current.cases) {
      if (!baseline->find(c.name)) {
        result.rows.push_back({c.name, "status", "-", c.status, "", "", Verdict::kInfo,
                               "new case: not in the baseline", ""});
      }
    }
    ratios.insert(ratios.end(), baseline->ratios.begin(), baseline->ratios.end());
  } else if (ratios.empty()) {
    throw Error("nothing to check: give --baseline, or --ratio rules to check within the run");
  }
  for (const auto& rule : ratios) check_ratio(rule, current, result.rows);
  return result;
}

namespace {

// "1 regression(s) in 100 check(s)[, 7 inconclusive (too few repetitions to
// detect a slowdown of the threshold)]".
std::string tally(const CheckResult& result) {
  std::string out =
      fmt::format("{} regression(s) in {} check(s)", result.regressions(), result.rows.size());
  if (result.inconclusive() > 0) {
    out +=
        fmt::format(", {} inconclusive (too few repetitions to detect a slowdown of the threshold)",
                    result.inconclusive());
  }
  return out;
}

}  // namespace

std::string check_table_text(const CheckResult& result) {
  const std::vector<std::string> header = {"case", "metric",     "baseline", "current", "change",
                                           "p",    "detectable", "verdict",  "note"};
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : result.rows) {
    rows.push_back({r.case_name, r.metric, r.baseline, r.current, r.change, r.p_value, r.detectable,
                    std::string(to_string(r.verdict)), r.note});
  }
  std::vector<size_t> width(header.size());
  for (size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& row : rows) {
    for (size_t i = 0; i + 1 < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t i = 0; i < cells.size(); ++i) {
      out += i + 1 < cells.size() ? fmt::format("{:<{}}  ", cells[i], width[i]) : cells[i];
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = fmt::format(
      "suite {}: current {} vs baseline {} (threshold {:g}%, alpha {:g})\n", result.suite,
      result.current_source,
      result.baseline_source.empty() ? "(none: ratio rules only)" : result.baseline_source,
      result.threshold_pct, result.alpha);
  out += line(header);
  for (const auto& row : rows) out += line(row);
  for (const auto& warning : result.warnings) out += "warning: " + warning + "\n";
  return out + tally(result) + "\n";
}

std::string check_markdown(const CheckResult& result) {
  std::string out = fmt::format(
      "## trainscope check: suite {}\n\n{}. Current: {}; baseline: {}; threshold {:g}%, "
      "alpha {:g}.\n\n",
      markdown_cell(result.suite), tally(result), markdown_cell(result.current_source),
      markdown_cell(result.baseline_source.empty() ? "none (ratio rules only)"
                                                   : result.baseline_source),
      result.threshold_pct, result.alpha);
  out +=
      "| case | metric | baseline | current | change | p | detectable | verdict | note |\n"
      "|:--|:--|--:|--:|--:|--:|--:|:--|:--|\n";
  for (const auto& r : result.rows) {
    const bool alarm = r.verdict == Verdict::kRegression || r.verdict == Verdict::kInconclusive;
    const std::string verdict =
        alarm ? fmt::format("**{}**", to_string(r.verdict)) : std::string(to_string(r.verdict));
    out +=
        fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", markdown_cell(r.case_name),
                    markdown_cell(r.metric), markdown_cell(r.baseline), markdown_cell(r.current),
                    markdown_cell(r.change), markdown_cell(r.p_value), markdown_cell(r.detectable),
                    verdict, markdown_cell(r.note));
  }
  if (!result.warnings.empty()) out += "\n";
  for (const auto& w : result.warnings) out += "- **Warning**: " + markdown_cell(w) + "\n";
  return out;
}

}  // namespace trainscope::check
