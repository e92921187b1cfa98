#include "report/comparison.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "report/dilation.h"
#include "base/format.h"

namespace trainscope::report {

namespace {
using results::kNaN;
}

std::vector<double> repetition_tokens_per_s(const analysis::CaseData& c) {
  std::vector<double> out;
  for (const analysis::RunData* run : c.usable_runs())
    out.push_back(run->summary->totals.tokens_per_s);
  return out;
}

std::string with_interval(double value, const analysis::Interval& interval, int digits,
                          const std::string& suffix) {
  if (!std::isfinite(value)) return "-";
  const std::string shown = format_number(value, digits) + suffix;
  if (!interval.has_interval()) return shown;
  return fmt::format("{} [{}, {}]", shown, format_number(interval.low, digits),
                     format_number(interval.high, digits));
}

Comparison compare_cases(const analysis::SuiteData& suite) {
  Comparison out;
  if (suite.cases.empty()) return out;
  const analysis::CaseData* baseline = nullptr;
  for (const auto& c : suite.cases) {
    if (c.run_case.mode == "naive" && full_speed(c.run_case)) {
      baseline = &c;
      break;
    }
  }
  if (!baseline) baseline = suite.find_case("naive");
  if (!baseline) baseline = &suite.cases.front();
  out.baseline_case = baseline->name;
  const analysis::CaseFigures base = analysis::case_figures(*baseline);
  const std::vector<double> base_tokens = repetition_tokens_per_s(*baseline);
  for (const auto& c : suite.cases) {
    ComparisonRow row;
    row.case_name = c.name;
    row.is_baseline = &c == baseline;
    row.figures = analysis::case_figures(c);
    const bool measurable = base.tokens_per_s > 0 && row.figures.tokens_per_s > 0;
    row.speedup = measurable ? row.figures.tokens_per_s / base.tokens_per_s : kNaN;
    const double growth = static_cast<double>(row.figures.world_size) /
                          static_cast<double>(std::max(1, base.world_size));
    row.efficiency = measurable ? row.speedup / growth : kNaN;
    const std::vector<double> tokens = repetition_tokens_per_s(c);
    row.tokens_interval = analysis::bootstrap_median(tokens);
    if (measurable && !row.is_baseline) {
      row.speedup_interval = analysis::bootstrap_ratio_of_medians(tokens, base_tokens);
    }
    out.rows.push_back(std::move(row));
  }
  return out;
}

double amdahl_speedup(double serial_fraction, double n) {
  return 1.0 / (serial_fraction + (1.0 - serial_fraction) / n);
}

std::optional<AmdahlFit> fit_amdahl(const std::vector<AmdahlPoint>& points) {
  double sxy = 0, sxx = 0;
  int used = 0;
  for (const auto& p : points) {
    if (!(p.n > 1) || !(p.speedup > 0) || !std::isfinite(p.speedup)) continue;
    const double x = 1.0 - 1.0 / p.n;
    const double y = 1.0 / p.speedup - 1.0 / p.n;
    sxy += x * y;
    sxx += x * x;
    ++used;
  }
  if (used == 0) return std::nullopt;
  AmdahlFit fit;
  fit.serial_fraction = std::clamp(sxy / sxx, 0.0, 1.0);
  fit.points = used;
  double ss = 0;
  int counted = 0;
  for (const auto& p : points) {
    if (!(p.n > 0) || !(p.speedup > 0) || !std::isfinite(p.speedup)) continue;
    const double r = p.speedup - amdahl_speedup(fit.serial_fraction, p.n);
    ss += r * r;
    ++counted;
  }
  fit.rms_residual = counted ? std::sqrt(ss / counted) : 0;
  return fit;
}

double case_cores(const analysis::CaseData& c) {
  auto runs = c.usable_runs();
  if (runs.empty()) return kNaN;
  const results::RunSummary& s = *runs.front()->summary;
  const auto& rc = c.run_case;
  double online = kNaN;
  for (const auto& r : s.ranks) {
    if (r.load_start.cores > 0) online = static_cast<double>(r.load_start.cores);
  }
  const double asked = static_cast<double>(s.world_size) * std::max(1, s.threads_per_rank);
  double cores = std::isnan(online) ? asked : std::min(asked, online);
  if (rc.cores_per_host > 0) {
    cores = std::min(cores, static_cast<double>(rc.host_count) * rc.cores_per_host);
  }
  return cores;
}

namespace {

bool is_scaling_study(const analysis::SuiteData& suite, const Comparison& comparison) {
  std::set<int> worlds;
  for (const auto& row : comparison.rows) {
    if (row.figures.usable > 0) worlds.insert(row.figures.world_size);
  }
  return suite.suite.info.name.find("scaling") != std::string::npos || worlds.size() >= 3;
}

const analysis::CaseData* baseline_of(const analysis::SuiteData& suite,
                                      const Comparison& comparison) {
  return suite.find_case(comparison.baseline_case);
}

}  // namespace

std::vector<AmdahlPoint> scaling_points(const analysis::SuiteData& suite,
                                        const Comparison& comparison) {
  if (!is_scaling_study(suite, comparison)) return {};
  const analysis::CaseData* base = baseline_of(suite, comparison);
  int base_world = 1;
  for (const auto& row : comparison.rows) {
    if (row.is_baseline) base_world = std::max(1, row.figures.world_size);
  }
  const double base_cores = base ? case_cores(*base) : kNaN;
  std::vector<AmdahlPoint> points;
  for (const auto& row : comparison.rows) {
    if (std::isnan(row.speedup)) continue;
    const analysis::CaseData* c = suite.find_case(row.case_name);
    const double cores = c ? case_cores(*c) : kNaN;
    const double n = std::isnan(cores) || std::isnan(base_cores)
                         ? static_cast<double>(row.figures.world_size) / base_world
                         : cores / base_cores;
    points.push_back({n, row.speedup, row.speedup_interval});
  }
  return points;
}

std::string amdahl_not_fitted_reason(const analysis::SuiteData& suite,
                                     const Comparison& comparison) {
  if (!is_scaling_study(suite, comparison)) return "";
  if (fit_amdahl(scaling_points(suite, comparison))) return "";
  const analysis::CaseData* base = baseline_of(suite, comparison);
  const double cores = base ? case_cores(*base) : kNaN;
  if (std::isnan(cores)) return "";
  return fmt::format(
      "Amdahl's law is not fitted: no case computes on more cores than the baseline's {:.0f} "
      "(ranks x threads per rank, capped by the cores online), so adding ranks adds no compute "
      "to divide the work over and the speedups say nothing about a serial fraction.",
      cores);
}

std::string same_cores_note(const analysis::SuiteData& suite, const Comparison& comparison) {
  // The one-process case with the most cores: the baseline, or another one
  // (a process on every core beside a one-core baseline).
  const analysis::CaseData* base = baseline_of(suite, comparison);
  if (base && base->run_case.world_size != 1) base = nullptr;
  for (const auto& c : suite.cases) {
    if (c.run_case.world_size != 1 || c.run_case.host_count > 1 || !c.first_usable()) continue;
    if (!base || case_cores(c) > case_cores(*base)) base = &c;
  }
  if (!base) return "";
  const double base_cores = case_cores(*base);
  std::vector<std::string> names;
  int world = 0;
  for (const auto& c : suite.cases) {
    if (c.run_case.world_size < 2 || c.run_case.host_count > 1) continue;
    const double cores = case_cores(c);
    if (std::isnan(cores) || !(cores <= base_cores)) continue;
    names.push_back(c.name);
    world = std::max(world, c.run_case.world_size);
  }
  if (names.empty()) return "";
  return fmt::format(
      "Why data parallelism is not faster here: the {} data-parallel case(s) on this one machine "
      "(up to {} ranks) compute on no more cores than the one process of {} uses ({:.0f}), so the "
      "ranks split "
      "the same cores the one process used and add an all-reduce on top; a speedup needs ranks "
      "that bring their own cores, as a second machine does. The machines suite measures that on "
      "virtual hosts with their own cores and links, and the prediction below says what N hosts "
      "would do.",
      names.size(), world, base->name, base_cores);
}

}  // namespace trainscope::report
