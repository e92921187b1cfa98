// Where a series of figures (a case's metric over git revisions, in commit
// order) changed level: Pettitt's (1979) rank test for one change point,
// applied recursively to each side (binary segmentation) for several.
// Rank-based, so it needs no normality and one wild revision does not make
// a change.
//
// Pettitt: U_t = sum_{i <= t < j} sign(x_j - x_i) over the split after
// position t; K = max_t |U_t| at t*, and p ~= 2 exp(-6 K^2 / (T^3 + T^2))
// (the approximation of the paper, good for p <= 0.5; clipped at 1).
//
// Thread-safety: pure functions.
#ifndef TRAINSCOPE_ANALYSIS_CHANGE_POINT_H_
#define TRAINSCOPE_ANALYSIS_CHANGE_POINT_H_

#include <cstddef>
#include <span>
#include <vector>

namespace trainscope::analysis {

struct ChangePoint {
  size_t index = 0;      // the first element after the change
  double statistic = 0;  // K
  double p_value = 1;
  double median_before = 0;  // of the segment tested, either side
  double median_after = 0;
};

// The most likely single change of `x` (p_value 1 and index 0 for fewer
// than two elements).
ChangePoint pettitt_test(std::span<const double> x);

// The smallest p-value pettitt_test can give `n` values: that of a series
// whose first half lies wholly below its second (K = floor(n/2) ceil(n/2)).
// 6 revisions cannot go below 0.29, so a history that short finds nothing
// at 0.05 whatever it holds.
double pettitt_min_p_value(size_t n);
// The fewest values whose pettitt_min_p_value is below `alpha` (11 at 0.05).
size_t pettitt_values_needed(double alpha);

// Every change with p < alpha, by index; a segment shorter than
// 2 * min_segment is not split further.
std::vector<ChangePoint> find_change_points(std::span<const double> x, double alpha = 0.05,
                                            size_t min_segment = 2);

}  // namespace trainscope::analysis

#endif  // TRAINSCOPE_ANALYSIS_CHANGE_POINT_H_
