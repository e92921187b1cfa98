#include "analysis/intervals.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <cmath>
#include <random>
#include <vector>

#include "profiler/stats.h"
#include "analysis/rank_test.h"

namespace trainscope::analysis {

namespace {

constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

double sorted_median(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  return profiler::percentile_sorted(v, 0.5);
}

double median_copy(std::span<const double> x) {
  std::vector<double> v(x.begin(), x.end());
  return sorted_median(v);
}

// Median of a resample with replacement of x (into `scratch`).
double resampled_median(std::span<const double> x, std::mt19937_64& rng,
                        std::vector<double>& scratch) {
  std::uniform_int_distribution<size_t> pick(0, x.size() - 1);
  scratch.resize(x.size());
  for (double& s : scratch) s = x[pick(rng)];
  return sorted_median(scratch);
}

// The percentile interval of the bootstrap replicates, around `estimate`.
Interval percentile_interval(std::vector<double>& replicates, double estimate, double level) {
  std::sort(replicates.begin(), replicates.end());
  Interval out;
  out.estimate = estimate;
  out.level = level;
  out.low = profiler::percentile_sorted(replicates, (1 - level) / 2);
  out.high = profiler::percentile_sorted(replicates, 1 - (1 - level) / 2);
  return out;
}

// Sorted pairwise differences a_i - b_j.
std::vector<double> pairwise_differences(std::span<const double> a, std::span<const double> b) {
  std::vector<double> d;
  d.reserve(a.size() * b.size());
  for (double x : a)
    for (double y : b) d.push_back(x - y);
  std::sort(d.begin(), d.end());
  return d;
}

// |log x - median of the logs| of each figure, when there are two or more.
void log_deviations(std::span<const double> x, std::vector<double>& out) {
  if (x.size() < 2) return;
  std::vector<double> logs;
  for (double v : x) logs.push_back(std::log(v));
  const double center = median_copy(logs);
  for (double l : logs) out.push_back(std::fabs(l - center));
}

}  // namespace

bool Interval::has_interval() const { return std::isfinite(low) && std::isfinite(high); }

std::string format_interval(const Interval& iv, int digits, const std::string& suffix) {
  if (!std::isfinite(iv.estimate)) return "-";
  const std::string estimate = fmt::format("{:.{}f}{}", iv.estimate, digits, suffix);
  if (!iv.has_interval()) return estimate + " (one repetition: no interval)";
  return fmt::format("{} [{:.{}f}{}, {:.{}f}{}]", estimate, iv.low, digits, suffix, iv.high, digits,
                     suffix);
}

std::string format_change(const Interval& ratio, int digits) {
  if (!std::isfinite(ratio.estimate)) return "-";
  const auto pct = [digits](double r) { return fmt::format("{:+.{}f}%", (r - 1) * 100, digits); };
  if (!ratio.has_interval()) return pct(ratio.estimate) + " (one repetition: no interval)";
  return fmt::format("{} [{}, {}]", pct(ratio.estimate), pct(ratio.low), pct(ratio.high));
}

Interval bootstrap_ratio_of_medians(std::span<const double> a, std::span<const double> b,
                                    uint64_t seed, int resamples, double level) {
  Interval out;
  out.level = level;
  if (a.empty() || b.empty()) return out;
  out.estimate = median_copy(a) / median_copy(b);
  if (a.size() < 2 || b.size() < 2 || resamples < 1) return out;
  std::mt19937_64 rng(seed);
  std::vector<double> replicates, scratch;
  replicates.reserve(static_cast<size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    const double num = resampled_median(a, rng, scratch);
    replicates.push_back(num / resampled_median(b, rng, scratch));
  }
  return percentile_interval(replicates, out.estimate, level);
}

Interval bootstrap_median(std::span<const double> x, uint64_t seed, int resamples, double level) {
  Interval out;
  out.level = level;
  if (x.empty()) return out;
  out.estimate = median_copy(x);
  if (x.size() < 2 || resamples < 1) return out;
  std::mt19937_64 rng(seed);
  std::vector<double> replicates, scratch;
  replicates.reserve(static_cast<size_t>(resamples));
  for (int r = 0; r < resamples; ++r) replicates.push_back(resampled_median(x, rng, scratch));
  return percentile_interval(replicates, out.estimate, level);
}

Interval hodges_lehmann_shift(std::span<const double> a, std::span<const double> b, double level) {
  Interval out;
  out.level = level;
  if (a.empty() || b.empty()) return out;
  std::vector<double> d = pairwise_differences(a, b);
  out.estimate = profiler::percentile_sorted(d, 0.5);
  if (a.size() < 2 || b.size() < 2) return out;
  const auto m = static_cast<int64_t>(a.size()), n = static_cast<int64_t>(b.size());
  // The interval is [D(k), D(mn + 1 - k)] (1-based) with k - 1 the largest u
  // whose lower tail P(U <= u) stays within (1 - level) / 2.
  const double tail = (1 - level) / 2;
  int64_t k = 1;
  while (k < m * n / 2 + 1 && mann_whitney_null_cdf(m, n, k) <= tail) ++k;
  // P(U <= k - 1) <= tail: the interval covers 1 - 2 P(U <= k - 1).
  out.level = 1 - 2 * mann_whitney_null_cdf(m, n, k - 1);
  out.low = d[static_cast<size_t>(k - 1)];
  out.high = d[static_cast<size_t>(m * n - k)];
  return out;
}

Interval hodges_lehmann_ratio(std::span<const double> a, std::span<const double> b, double level) {
  std::vector<double> la, lb;
  for (double x : a) la.push_back(std::log(x));
  for (double y : b) lb.push_back(std::log(y));
  Interval out = hodges_lehmann_shift(la, lb, level);
  out.estimate = std::exp(out.estimate);
  out.low = std::exp(out.low);
  out.high = std::exp(out.high);
  return out;
}

double normal_quantile(double p) {
  if (!(p > 0 && p < 1)) return kNoValue;
  // Bisection on the standard library's erfc: 100 halvings of [-40, 40]
  // reach double precision; this runs a few times per check, not per sample.
  double lo = -40, hi = 40;
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double relative_noise(std::span<const double> a, std::span<const double> b) {
  std::vector<double> deviations;
  log_deviations(a, deviations);
  log_deviations(b, deviations);
  if (deviations.empty()) return kNoValue;
  // 1.4826 x the median absolute deviation is the standard deviation of
  // normal figures, and a few preempted repetitions do not move it.
  return 1.4826 * median_copy(deviations);
}

namespace {

// Noether's (1987) large-sample formula, solved for the shift in standard
// deviations: N = (z_{1-alpha/2} + z_power)^2 / (12 c (1 - c) (P - 1/2)^2),
// c = m / N, P = P(Y > X) = Phi(delta / sqrt 2) for normal figures.
double noether_shift(int64_t m, int64_t n, double alpha, double power) {
  const double total = static_cast<double>(m + n);
  const double c = static_cast<double>(m) / total;
  const double z = normal_quantile(1 - alpha / 2) + normal_quantile(power);
  const double p_minus_half = z / std::sqrt(12 * c * (1 - c) * total);
  if (p_minus_half >= 0.5) return std::numeric_limits<double>::infinity();
  return std::sqrt(2.0) * normal_quantile(0.5 + p_minus_half);
}

// The exact test's power at small sizes, where Noether's formula is far off
// (it calls 5 vs 5 powerless; separated samples reach p = 0.008): simulated
// normal repetitions from a fixed seed, the same draws for every shift
// tried, so the power grows with the shift and bisection finds it. Each
// draw's sides are sorted once; U at a shift is then one merge.
double simulated_shift(int64_t m, int64_t n, double alpha, double power) {
  int64_t critical = -1;  // reject when U <= critical or U >= m n - critical
  while (mann_whitney_null_cdf(m, n, critical + 1) < alpha / 2) ++critical;
  if (critical < 0) return std::numeric_limits<double>::infinity();
  constexpr int kDraws = 2000;
  std::mt19937_64 rng(kBootstrapSeed);
  std::normal_distribution<double> normal(0, 1);
  const auto width = static_cast<size_t>(m + n);
  std::vector<double> draws(kDraws * width);
  for (double& d : draws) d = normal(rng);
  for (int k = 0; k < kDraws; ++k) {
    double* x = &draws[k * width];
    std::sort(x, x + m);
    std::sort(x + m, x + m + n);
  }
  auto power_at = [&](double delta) {
    int rejected = 0;
    for (int k = 0; k < kDraws; ++k) {
      const double* x = &draws[k * width];
      const double* y = x + m;
      int64_t u = 0, below = 0;  // u: pairs with y + delta > x
      for (int64_t j = 0; j < n; ++j) {
        while (below < m && x[below] < y[j] + delta) ++below;
        u += below;
      }
      rejected += u <= critical || u >= m * n - critical;
    }
    return static_cast<double>(rejected) / kDraws;
  };
  double lo = 0, hi = 20;
  if (power_at(hi) < power) return std::numeric_limits<double>::infinity();
  for (int i = 0; i < 20; ++i) {
    const double mid = 0.5 * (lo + hi);
    (power_at(mid) < power ? lo : hi) = mid;
  }
  return hi;
}

// The detectable shift depends on the sizes, alpha and power alone, and a
// check asks for the same few sizes again and again.
double detectable_shift(int64_t m, int64_t n, double alpha, double power) {
  if (m > kMannWhitneyExactMax || n > kMannWhitneyExactMax) {
    return noether_shift(m, n, alpha, power);
  }
  static std::mutex mutex;
  static std::map<std::tuple<int64_t, int64_t, double, double>, double> cache;
  const auto key = std::tuple{m, n, alpha, power};
  {
    std::lock_guard lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  const double shift = simulated_shift(m, n, alpha, power);
  std::lock_guard lock(mutex);
  cache.emplace(key, shift);
  return shift;
}

}  // namespace

double minimum_detectable_effect(double noise, int64_t m, int64_t n, double alpha, double power) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (!std::isfinite(noise) || m < 1 || n < 1) return kInf;
  if (mann_whitney_min_p_value(m, n) >= alpha) return kInf;
  const double delta = detectable_shift(m, n, alpha, power);
  // delta standard deviations of the logs, as a relative change.
  return std::expm1(delta * noise);
}

int64_t repetitions_for_effect(double noise, double effect, double alpha, double power,
                               int64_t limit) {
  // The detectable effect falls as n grows: bisect for the first n it fits.
  auto fits = [&](int64_t n) {
    return minimum_detectable_effect(noise, n, n, alpha, power) <= effect;
  };
  if (!fits(limit)) return limit + 1;
  int64_t lo = 1, hi = limit;  // !fits(lo) (1 vs 1 detects nothing), fits(hi)
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    (fits(mid) ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace trainscope::analysis
