#include "kernels/rmsnorm.h"

#include <cmath>
#include <type_traits>

#include "kernels/parallel.h"
#include "kernels/simd_kernels.h"

namespace trainscope::kernels {

namespace {

// One row: rstd = (mean(x^2) + eps)^-1/2, y = w * x * rstd.
template <typename T>
T rmsnorm_row(T* y, const T* x, const T* weight, int C, float eps) {
  T ss = 0;
#pragma omp simd reduction(+ : ss)
  for (int c = 0; c < C; ++c) ss += x[c] * x[c];
  const T r = T(1) / std::sqrt(ss / C + T(eps));
#pragma omp simd
  for (int c = 0; c < C; ++c) y[c] = weight[c] * (x[c] * r);
  return r;
}

// float runs the dispatched vector code (kernels/simd_kernels.h) unless the
// reference is asked for (simd false); double, and that reference, run the
// loops here.
template <typename T>
bool use_simd() {
  return std::is_same_v<T, float> && internal::simd_enabled();
}

template <typename T>
T norm_row(T* y, const T* x, const T* weight, int C, float eps, bool simd) {
  if constexpr (std::is_same_v<T, float>) {
    if (simd) return internal::rmsnorm_row(y, x, weight, C, eps);
  }
  return rmsnorm_row(y, x, weight, C, eps);
}

template <typename T>
T add_norm_row(T* x, T* y, const T* add, const T* weight, int C, float eps, bool simd) {
  if constexpr (std::is_same_v<T, float>) {
    if (simd) return internal::add_rmsnorm_row(x, y, add, weight, C, eps);
  }
#pragma omp simd
  for (int c = 0; c < C; ++c) x[c] += add[c];
  return rmsnorm_row(y, x, weight, C, eps);
}

// dx += r w dy - (r^3 / C) x sum(w dy x)
template <typename T>
void norm_backward_row(T* dx, const T* dy, const T* x, const T* weight, T r, int C, bool simd) {
  if constexpr (std::is_same_v<T, float>) {
    if (simd) return internal::rmsnorm_backward_row(dx, dy, x, weight, r, C);
  }
  T dot = 0;
#pragma omp simd reduction(+ : dot)
  for (int c = 0; c < C; ++c) dot += weight[c] * dy[c] * x[c];
  const T k = r * r * r * dot / C;
#pragma omp simd
  for (int c = 0; c < C; ++c) dx[c] += r * weight[c] * dy[c] - k * x[c];
}

// dweight[c] += dy[c] x[c] r over c in [0, n)
template <typename T>
void dweight_row(T* dweight, const T* dy, const T* x, T r, int64_t n, bool simd) {
  if constexpr (std::is_same_v<T, float>) {
    if (simd) return internal::rmsnorm_dweight(dweight, dy, x, r, n);
  }
  for (int64_t c = 0; c < n; ++c) dweight[c] += dy[c] * x[c] * r;
}

}  // namespace

template <typename T>
void rmsnorm_forward(T* out, T* rstd, const T* inp, const T* weight, int N, int C, float eps) {
  const bool simd = use_simd<T>();
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const int64_t at = static_cast<int64_t>(n) * C;
    rstd[n] = norm_row(out + at, inp + at, weight, C, eps, simd);
  }
}

template <typename T>
void add_rmsnorm_forward(T* x, T* out, T* rstd, const T* residual, const T* weight, int N, int C,
                         float eps) {
  const bool simd = use_simd<T>();
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const int64_t at = static_cast<int64_t>(n) * C;
    rstd[n] = add_norm_row(x + at, out + at, residual + at, weight, C, eps, simd);
  }
}

// y = w * x * r with r = (mean(x^2) + eps)^-1/2, so
// dx_i = r * w_i dy_i - (r^3 / C) * x_i * sum_j w_j dy_j x_j.
template <typename T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight,
                      const T* rstd, int N, int C) {
  const bool simd = use_simd<T>();
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int n = 0; n < N; ++n) {
      const int64_t at = static_cast<int64_t>(n) * C;
      norm_backward_row(dinp + at, dout + at, inp + at, weight, rstd[n], C, simd);
    }
    // dweight by column ranges: deterministic for any thread count. A frozen
    // weight (LoRA) has none.
    int64_t c0 = 0, c1 = 0;
    if (dweight != nullptr) {
      internal::chunk_range(C, omp_get_num_threads(), omp_get_thread_num(), &c0, &c1);
    }
    for (int n = 0; c0 < c1 && n < N; ++n) {
      const int64_t at = static_cast<int64_t>(n) * C + c0;
      dweight_row(dweight + c0, dout + at, inp + at, rstd[n], c1 - c0, simd);
    }
  }
}

template void rmsnorm_forward<float>(float*, float*, const float*, const float*, int, int, float);
template void rmsnorm_forward<double>(double*, double*, const double*, const double*, int, int,
                                      float);
template void add_rmsnorm_forward<float>(float*, float*, float*, const float*, const float*, int,
                                         int, float);
template void add_rmsnorm_forward<double>(double*, double*, double*, const double*, const double*,
                                          int, int, float);
template void rmsnorm_backward<float>(float*, float*, const float*, const float*, const float*,
                                      const float*, int, int);
template void rmsnorm_backward<double>(double*, double*, const double*, const double*,
                                       const double*, const double*, int, int);

}  // namespace trainscope::kernels
