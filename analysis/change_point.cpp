#include "analysis/change_point.h"

#include <algorithm>
#include <cmath>

#include "results/figures.h"

namespace trainscope::analysis {

namespace {

int sign_of(double v) { return (v > 0) - (v < 0); }

// Binary segmentation over x[begin, end), appending changes (global indices).
void segment_changes(std::span<const double> x, size_t begin, size_t end, double alpha,
                     size_t min_segment, std::vector<ChangePoint>& out) {
  if (end - begin < 2 * min_segment || end - begin < 2) return;
  ChangePoint cp = pettitt_test(x.subspan(begin, end - begin));
  if (!(cp.p_value < alpha)) return;
  cp.index += begin;
  if (cp.index - begin < min_segment || end - cp.index < min_segment) return;
  out.push_back(cp);
  segment_changes(x, begin, cp.index, alpha, min_segment, out);
  segment_changes(x, cp.index, end, alpha, min_segment, out);
}

}  // namespace

ChangePoint pettitt_test(std::span<const double> x) {
  ChangePoint best;
  const size_t t_count = x.size();
  if (t_count < 2) return best;
  // U_t = U_{t-1} + sum_j sign(x_t - x_j): moving x_t to the left side adds
  // its pairs with every later element and cancels those with earlier ones.
  double u = 0;
  for (size_t t = 0; t + 1 < t_count; ++t) {
    for (size_t j = 0; j < t_count; ++j) u += sign_of(x[t] - x[j]);
    if (std::fabs(u) > best.statistic) {
      best.statistic = std::fabs(u);
      best.index = t + 1;
    }
  }
  const double n = static_cast<double>(t_count);
  const double k = best.statistic;
  best.p_value = std::min(1.0, 2 * std::exp(-6 * k * k / (n * n * n + n * n)));
  if (best.index == 0) return best;
  best.median_before = results::median_of({x.begin(), x.begin() + static_cast<long>(best.index)});
  best.median_after = results::median_of({x.begin() + static_cast<long>(best.index), x.end()});
  return best;
}

double pettitt_min_p_value(size_t n) {
  if (n < 2) return 1;
  const double t = static_cast<double>(n);
  const double k = std::floor(t / 2) * std::ceil(t / 2);
  return std::min(1.0, 2 * std::exp(-6 * k * k / (t * t * t + t * t)));
}

size_t pettitt_values_needed(double alpha) {
  size_t n = 2;
  while (n < 100000 && !(pettitt_min_p_value(n) < alpha)) ++n;
  return n;
}

std::vector<ChangePoint> find_change_points(std::span<const double> x, double alpha,
                                            size_t min_segment) {
  std::vector<ChangePoint> out;
  segment_changes(x, 0, x.size(), alpha, std::max<size_t>(min_segment, 1), out);
  std::sort(out.begin(), out.end(),
            [](const ChangePoint& a, const ChangePoint& b) { return a.index < b.index; });
  return out;
}

}  // namespace trainscope::analysis
