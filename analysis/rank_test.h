// Whether two sets of figures differ: the Mann-Whitney U rank test, and the
// smallest p-value it can give at a sample size (what a regression check can
// detect at all: check/regression_check.h).
//
// Thread-safety: pure functions.
#ifndef TRAINSCOPE_ANALYSIS_RANK_TEST_H_
#define TRAINSCOPE_ANALYSIS_RANK_TEST_H_

#include <cstdint>
#include <span>
#include <string_view>

namespace trainscope::analysis {

// Mann-Whitney U (Wilcoxon rank-sum) test of whether samples a and b come from
// the same distribution, two-sided. u is the statistic of `a`: the number of
// pairs (x in a, y in b) with x > y, ties counting 1/2; u / (n_a n_b) is the
// probability that a random draw of a exceeds one of b (0.5 = no effect).
// Method: exact null distribution when there are no ties and both samples have
// at most kMannWhitneyExactMax elements; otherwise the normal approximation
// with tie correction and continuity correction (as scipy's default).
// Either sample empty, or every value tied: p_value = 1 (no evidence).
inline constexpr int kMannWhitneyExactMax = 30;

enum class MannWhitneyMethod { kExact, kNormal };
std::string_view mann_whitney_method_name(MannWhitneyMethod method);

struct MannWhitneyResult {
  double u = 0;
  double p_value = 1;
  double z = 0;  // normal-approximation z score (0 when exact)
  MannWhitneyMethod method = MannWhitneyMethod::kNormal;
};

MannWhitneyResult mann_whitney_u(std::span<const double> a, std::span<const double> b);

// The smallest p-value mann_whitney_u can return for samples of sizes m and n
// without ties (measured times): the p of two completely separated samples.
// When it is not below a significance level, no data of these sizes can be
// significant at that level: 3 vs 3 cannot go below 0.1, 4 vs 4 reaches
// 0.029. 1 when either sample is empty.
double mann_whitney_min_p_value(int64_t m, int64_t n);

// P(U <= u) under the null hypothesis for samples of sizes m and n without
// ties: exact up to kMannWhitneyExactMax a side, else the normal
// approximation with continuity correction. The critical values of the
// published tables and the Hodges-Lehmann interval (analysis/
// intervals.h) are read from it. 0 for u < 0, 1 for u >= m n.
double mann_whitney_null_cdf(int64_t m, int64_t n, int64_t u);

}  // namespace trainscope::analysis

#endif  // TRAINSCOPE_ANALYSIS_RANK_TEST_H_
