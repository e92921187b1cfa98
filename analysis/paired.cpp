#include "analysis/paired.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "profiler/stats.h"
#include "analysis/intervals.h"

namespace trainscope::analysis {

namespace {

// The number of subsets of {1..n} by their sum, as doubles (2^60 and its
// parts are exact enough in a double for tail probabilities).
std::vector<double> signed_rank_counts(int64_t n) {
  const int64_t max_sum = n * (n + 1) / 2;
  std::vector<double> counts(static_cast<size_t>(max_sum + 1), 0.0);
  counts[0] = 1;
  for (int64_t rank = 1; rank <= n; ++rank) {
    for (int64_t s = rank * (rank + 1) / 2; s >= rank; --s) {
      counts[static_cast<size_t>(s)] += counts[static_cast<size_t>(s - rank)];
    }
  }
  return counts;
}

// Sorted averages (x_i + x_j) / 2 over i <= j.
std::vector<double> walsh_averages(std::span<const double> x) {
  std::vector<double> w;
  w.reserve(x.size() * (x.size() + 1) / 2);
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t j = i; j < x.size(); ++j) w.push_back((x[i] + x[j]) / 2);
  std::sort(w.begin(), w.end());
  return w;
}

// Pairs in all for the interval's side `width` (log units, from the
// estimate) to shrink to `room`, as 1 / sqrt(n) predicts.
int pairs_for(int n, double width, double room) {
  constexpr int kMany = 9999;
  if (!(room > 0) || !std::isfinite(width)) return kMany;
  const double needed = std::ceil(n * (width / room) * (width / room));
  return static_cast<int>(std::clamp(needed, static_cast<double>(n + 1), double{kMany}));
}

}  // namespace

double signed_rank_null_cdf(int64_t n, int64_t t) {
  if (t < 0) return 0;
  const int64_t max_sum = n * (n + 1) / 2;
  if (t >= max_sum) return 1;
  if (n <= kSignedRankExactMax) {
    const std::vector<double> counts = signed_rank_counts(n);
    double below = 0;
    for (int64_t s = 0; s <= t; ++s) below += counts[static_cast<size_t>(s)];
    return below / std::ldexp(1.0, static_cast<int>(n));
  }
  const double mean = n * (n + 1) / 4.0;
  const double sd = std::sqrt(n * (n + 1) * (2.0 * n + 1) / 24.0);
  return 0.5 * std::erfc(-((t + 0.5 - mean) / sd) / std::sqrt(2.0));
}

Interval hodges_lehmann_paired(std::span<const double> log_ratios, double level) {
  Interval out;
  out.level = level;
  if (log_ratios.empty()) return out;
  const std::vector<double> w = walsh_averages(log_ratios);
  out.estimate = std::exp(profiler::percentile_sorted(w, 0.5));
  const auto n = static_cast<int64_t>(log_ratios.size());
  if (n < 2) return out;
  const auto m = static_cast<int64_t>(w.size());
  // The interval is [W(k), W(M + 1 - k)] (1-based) with k - 1 the largest t
  // whose lower tail P(T+ <= t) stays within (1 - level) / 2.
  const double tail = (1 - level) / 2;
  int64_t k = 1;
  while (k < m / 2 + 1 && signed_rank_null_cdf(n, k) <= tail) ++k;
  out.level = 1 - 2 * signed_rank_null_cdf(n, k - 1);
  out.low = std::exp(w[static_cast<size_t>(k - 1)]);
  out.high = std::exp(w[static_cast<size_t>(m - k)]);
  return out;
}

std::string_view paired_verdict_name(PairedVerdict verdict) {
  return kPairedVerdictNames[static_cast<size_t>(verdict)];
}

PairedDecision decide_pairs(std::span<const double> log_ratios, double threshold_pct, int min_pairs,
                            bool at_cap) {
  PairedDecision d;
  d.pairs = static_cast<int>(log_ratios.size());
  d.ratio = hodges_lehmann_paired(log_ratios);
  const double bound = std::log1p(threshold_pct / 100);
  const int floor_pairs = std::max(min_pairs, kMinPairsForInterval);
  if (d.pairs >= floor_pairs && d.ratio.has_interval()) {
    const double est = std::log(d.ratio.estimate);
    const double lo = std::log(d.ratio.low), hi = std::log(d.ratio.high);
    if (lo > 0 && est > bound) {
      d.verdict = PairedVerdict::kRegression;
      return d;
    }
    if (hi < bound) {
      d.verdict = PairedVerdict::kPass;
      return d;
    }
    // The nearer decision: above the bound, a lower end above 1; else an
    // upper end below the bound.
    d.pairs_needed =
        est > bound ? pairs_for(d.pairs, est - lo, est) : pairs_for(d.pairs, hi - est, bound - est);
  } else {
    d.pairs_needed = floor_pairs;
  }
  d.verdict = at_cap ? PairedVerdict::kInconclusive : PairedVerdict::kUndecided;
  return d;
}

std::string format_ratio(const Interval& ratio) {
  if (!std::isfinite(ratio.estimate)) return "-";
  if (!ratio.has_interval()) return fmt::format("{:.3f}x (one pair: no interval)", ratio.estimate);
  return fmt::format("{:.3f}x [{:.2f}, {:.2f}]", ratio.estimate, ratio.low, ratio.high);
}

}  // namespace trainscope::analysis
