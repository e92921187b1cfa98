#include "report/comparison.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace trainscope::report {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

Comparison compare_cases(const SuiteData& suite) {
  Comparison out;
  if (suite.cases.empty()) return out;
  const CaseData* baseline = nullptr;
  for (const auto& c : suite.cases) {
    if (c.run_case.mode == "naive") {
      baseline = &c;
      break;
    }
  }
  if (!baseline) baseline = suite.find_case("naive");
  if (!baseline) baseline = &suite.cases.front();
  out.baseline_case = baseline->name;
  const CaseFigures base = case_figures(*baseline);
  for (const auto& c : suite.cases) {
    ComparisonRow row;
    row.case_name = c.name;
    row.is_baseline = &c == baseline;
    row.figures = case_figures(c);
    const bool measurable = base.tokens_per_s > 0 && row.figures.tokens_per_s > 0;
    row.speedup = measurable ? row.figures.tokens_per_s / base.tokens_per_s : kNaN;
    const double growth = static_cast<double>(row.figures.world_size) /
                          static_cast<double>(std::max(1, base.world_size));
    row.efficiency = measurable ? row.speedup / growth : kNaN;
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

std::vector<AmdahlPoint> scaling_points(const SuiteData& suite, const Comparison& comparison) {
  int base_world = 1;
  std::set<int> worlds;
  for (const auto& row : comparison.rows) {
    if (row.is_baseline) base_world = std::max(1, row.figures.world_size);
    if (row.figures.usable > 0) worlds.insert(row.figures.world_size);
  }
  const bool named = suite.suite.info.name.find("scaling") != std::string::npos;
  if (!named && worlds.size() < 3) return {};
  std::vector<AmdahlPoint> points;
  for (const auto& row : comparison.rows) {
    if (std::isnan(row.speedup)) continue;
    points.push_back({static_cast<double>(row.figures.world_size) / base_world, row.speedup});
  }
  return points;
}

}  // namespace trainscope::report
