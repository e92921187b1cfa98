#include "profiler/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace trainscope::profiler {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

double percentile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return kNaN;
  q = std::clamp(q, 0.0, 1.0);
  const double h = static_cast<double>(sorted.size() - 1) * q;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

Summary summarize(std::span<const double> samples) {
  Summary s;
  s.count = static_cast<int64_t>(samples.size());
  if (samples.empty()) {
    s.mean = s.median = s.stddev = s.cv = s.min = s.max = s.p50 = s.p95 = s.p99 = kNaN;
    return s;
  }
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  // Two passes: the mean first, then squared deviations from it. Summing
  // offsets from the minimum keeps a constant series exact (mean = the value,
  // stddev = 0) and large common offsets (timestamps) from eating precision.
  const double base = sorted.front();
  double shifted_sum = 0;
  for (double x : sorted) shifted_sum += x - base;
  s.mean = base + shifted_sum / static_cast<double>(s.count);
  double m2 = 0;
  for (double x : sorted) m2 += (x - s.mean) * (x - s.mean);
  s.stddev = s.count > 1 ? std::sqrt(m2 / static_cast<double>(s.count - 1)) : 0.0;
  s.cv = s.mean != 0 ? s.stddev / s.mean : kNaN;
  s.min = sorted.front();
  s.max = sorted.back();
  s.p50 = percentile_sorted(sorted, 0.50);
  s.median = s.p50;
  s.p95 = percentile_sorted(sorted, 0.95);
  s.p99 = percentile_sorted(sorted, 0.99);
  return s;
}

void SampleSet::merge(const SampleSet& other) {
  samples_.insert(samples_.end(), other.samples_.begin(), other.samples_.end());
}

void RunningMoments::add(double x) {
  if (count_ == 0) {
    min_ = max_ = x;
  } else {
    min_ = std::min(min_, x);
    max_ = std::max(max_, x);
  }
  ++count_;
  const double delta = x - mean_;
  mean_ += delta / static_cast<double>(count_);
  m2_ += delta * (x - mean_);
}

void RunningMoments::merge(const RunningMoments& other) {
  if (other.count_ == 0) return;
  if (count_ == 0) {
    *this = other;
    return;
  }
  const double n_a = static_cast<double>(count_);
  const double n_b = static_cast<double>(other.count_);
  const double n = n_a + n_b;
  const double delta = other.mean_ - mean_;
  mean_ += delta * n_b / n;
  m2_ += other.m2_ + delta * delta * n_a * n_b / n;
  count_ += other.count_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

double RunningMoments::mean() const { return count_ == 0 ? kNaN : mean_; }
double RunningMoments::variance() const {
  if (count_ == 0) return kNaN;
  return count_ == 1 ? 0.0 : m2_ / static_cast<double>(count_ - 1);
}
double RunningMoments::stddev() const { return std::sqrt(variance()); }
double RunningMoments::min() const { return count_ == 0 ? kNaN : min_; }
double RunningMoments::max() const { return count_ == 0 ? kNaN : max_; }

std::string_view mann_whitney_method_name(MannWhitneyMethod method) {
  return method == MannWhitneyMethod::kExact ? "exact" : "normal";
}

namespace {

// P(U = u) for u = 0..m*n under the null hypothesis, without ties. The largest
// of the m + n values belongs to the first sample with probability m / (m + n)
// and then beats all n values of the second, which gives the recursion
// p(i, j, u) = i/(i+j) p(i-1, j, u-j) + j/(i+j) p(i, j-1, u).
// Only additions of probabilities: no cancellation, unlike the q-binomial form.
std::vector<double> exact_u_distribution(int m, int n) {
  const int max_u = m * n;
  // prev[j] = distribution for (i - 1, j); cur[j] for (i, j).
  std::vector<std::vector<double>> prev(n + 1, std::vector<double>(max_u + 1, 0.0));
  for (int j = 0; j <= n; ++j) prev[j][0] = 1.0;  // i = 0: U is 0
  for (int i = 1; i <= m; ++i) {
    std::vector<std::vector<double>> cur(n + 1, std::vector<double>(max_u + 1, 0.0));
    cur[0][0] = 1.0;
    for (int j = 1; j <= n; ++j) {
      const double from_a = static_cast<double>(i) / (i + j);
      const double from_b = static_cast<double>(j) / (i + j);
      for (int u = 0; u <= i * j; ++u) {
        double p = from_b * cur[j - 1][u];
        if (u >= j) p += from_a * prev[j][u - j];
        cur[j][u] = p;
      }
    }
    prev = std::move(cur);
  }
  return prev[n];
}

}  // namespace

MannWhitneyResult mann_whitney_u(std::span<const double> a, std::span<const double> b) {
  MannWhitneyResult r;
  const auto m = static_cast<int64_t>(a.size());
  const auto n = static_cast<int64_t>(b.size());
  if (m == 0 || n == 0) return r;

  // Midranks over the pooled samples; the tie term feeds the variance.
  std::vector<std::pair<double, bool>> pooled;  // (value, is_from_a)
  pooled.reserve(a.size() + b.size());
  for (double x : a) pooled.emplace_back(x, true);
  for (double y : b) pooled.emplace_back(y, false);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& l, const auto& r) { return l.first < r.first; });
  const int64_t total = m + n;
  double rank_sum_a = 0;
  double tie_term = 0;  // sum over tie groups of t^3 - t
  for (int64_t i = 0; i < total;) {
    int64_t j = i;
    while (j < total && pooled[j].first == pooled[i].first) ++j;
    const double midrank = 0.5 * static_cast<double>(i + 1 + j);  // mean of ranks i+1..j
    for (int64_t k = i; k < j; ++k)
      if (pooled[k].second) rank_sum_a += midrank;
    const double t = static_cast<double>(j - i);
    tie_term += t * t * t - t;
    i = j;
  }
  r.u = rank_sum_a - static_cast<double>(m) * static_cast<double>(m + 1) / 2.0;

  const double mn = static_cast<double>(m) * static_cast<double>(n);
  if (tie_term == 0 && m <= kMannWhitneyExactMax && n <= kMannWhitneyExactMax) {
    r.method = MannWhitneyMethod::kExact;
    const std::vector<double> pmf = exact_u_distribution(static_cast<int>(m), static_cast<int>(n));
    const auto u = static_cast<int64_t>(std::llround(r.u));
    double below = 0;  // P(U <= u)
    double above = 0;  // P(U >= u)
    for (int64_t k = 0; k < static_cast<int64_t>(pmf.size()); ++k) {
      if (k <= u) below += pmf[k];
      if (k >= u) above += pmf[k];
    }
    r.p_value = std::min(1.0, 2.0 * std::min(below, above));
    return r;
  }

  r.method = MannWhitneyMethod::kNormal;
  const double nt = static_cast<double>(total);
  const double variance = mn / 12.0 * ((nt + 1.0) - tie_term / (nt * (nt - 1.0)));
  if (variance <= 0) return r;  // every value tied: no evidence either way
  const double deviation = r.u - mn / 2.0;
  const double corrected = std::max(0.0, std::abs(deviation) - 0.5);
  r.z = std::copysign(corrected / std::sqrt(variance), deviation);
  r.p_value = std::min(1.0, std::erfc(std::abs(r.z) / std::sqrt(2.0)));
  return r;
}

double mann_whitney_min_p_value(int64_t m, int64_t n) {
  if (m <= 0 || n <= 0) return 1.0;
  if (m <= kMannWhitneyExactMax && n <= kMannWhitneyExactMax) {
    // U = 0 is one of C(m + n, m) equally likely arrangements; two-sided.
    double arrangements = 1;
    for (int64_t i = 1; i <= m; ++i) arrangements = arrangements * static_cast<double>(n + i) / i;
    return std::min(1.0, 2.0 / arrangements);
  }
  // The normal approximation at U = 0, as mann_whitney_u computes it.
  const double mn = static_cast<double>(m) * static_cast<double>(n);
  const double variance = mn / 12.0 * static_cast<double>(m + n + 1);
  const double z = (mn / 2.0 - 0.5) / std::sqrt(variance);
  return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

}  // namespace trainscope::profiler
