// Finite-difference gradient checking in double precision, shared by the
// kernel and model tests.
#ifndef TRAINSCOPE_TESTS_KERNELS_GRADCHECK_H_
#define TRAINSCOPE_TESTS_KERNELS_GRADCHECK_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace trainscope::testing {

inline std::vector<double> random_vector(std::size_t n, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

// Checks analytic[i] against the central difference of loss() in x[i], for
// every i (or `max_checks` evenly spaced ones). loss() must read x.
inline void expect_gradient_matches(const std::string& what, std::vector<double>& x,
                                    const std::vector<double>& analytic,
                                    const std::function<double()>& loss,
                                    std::size_t max_checks = 1u << 30, double h = 1e-5,
                                    double tol = 1e-6) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  const std::size_t stride = std::max<std::size_t>(1, x.size() / std::min(max_checks, x.size()));
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); i += stride) {
    const double saved = x[i];
    x[i] = saved + h;
    const double up = loss();
    x[i] = saved - h;
    const double down = loss();
    x[i] = saved;
    const double numeric = (up - down) / (2 * h);
    const double err = std::abs(numeric - analytic[i]) / std::max(1.0, std::abs(numeric));
    worst = std::max(worst, err);
    ASSERT_LT(err, tol) << what << "[" << i << "]: analytic " << analytic[i] << " numeric "
                        << numeric;
  }
  ::testing::Test::RecordProperty(what + "_worst_error", std::to_string(worst));
}

// sum_i a[i] * b[i]: the scalar "loss" through which kernels are checked.
inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace trainscope::testing

#endif  // TRAINSCOPE_TESTS_KERNELS_GRADCHECK_H_
