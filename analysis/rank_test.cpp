#include "analysis/rank_test.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace trainscope::analysis {

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

double mann_whitney_null_cdf(int64_t m, int64_t n, int64_t u) {
  if (u < 0) return 0.0;
  if (m <= 0 || n <= 0 || u >= m * n) return 1.0;
  if (m <= kMannWhitneyExactMax && n <= kMannWhitneyExactMax) {
    const std::vector<double> pmf = exact_u_distribution(static_cast<int>(m), static_cast<int>(n));
    double below = 0;
    for (int64_t k = 0; k <= u; ++k) below += pmf[k];
    return std::min(1.0, below);
  }
  const double mn = static_cast<double>(m) * static_cast<double>(n);
  const double sd = std::sqrt(mn / 12.0 * static_cast<double>(m + n + 1));
  return 0.5 * std::erfc(-(static_cast<double>(u) + 0.5 - mn / 2.0) / sd / std::sqrt(2.0));
}

}  // namespace trainscope::analysis
