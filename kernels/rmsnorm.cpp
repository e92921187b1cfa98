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

// float runs the dispatched vector code (kernels/simd_kernels.h), each
// thread's rows in one call, unless the reference is asked for; double, and
// that reference, run the loops below.
template <typename T>
bool use_simd() {
  return std::is_same_v<T, float> && internal::simd_enabled();
}

}  // namespace

template <typename T>
void rmsnorm_forward(T* out, T* rstd, const T* inp, const T* weight, int N, int C, float eps) {
  if constexpr (std::is_same_v<T, float>) {
    if (use_simd<T>()) {
      return internal::parallel_ranges(N, [&](int64_t n0, int64_t n1) {
        internal::rmsnorm_rows(out + n0 * C, rstd + n0, inp + n0 * C, weight, n1 - n0, C, eps);
      });
    }
  }
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const int64_t at = static_cast<int64_t>(n) * C;
    rstd[n] = rmsnorm_row(out + at, inp + at, weight, C, eps);
  }
}

template <typename T>
void add_rmsnorm_forward(T* x, T* out, T* rstd, const T* residual, const T* weight, int N, int C,
                         float eps) {
  if constexpr (std::is_same_v<T, float>) {
    if (use_simd<T>()) {
      return internal::parallel_ranges(N, [&](int64_t n0, int64_t n1) {
        internal::add_rmsnorm_rows(x + n0 * C, out + n0 * C, rstd + n0, residual + n0 * C, weight,
                                   n1 - n0, C, eps);
      });
    }
  }
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const int64_t at = static_cast<int64_t>(n) * C;
    T* row = x + at;
    const T* add = residual + at;
#pragma omp simd
    for (int c = 0; c < C; ++c) row[c] += add[c];
    rstd[n] = rmsnorm_row(out + at, row, weight, C, eps);
  }
}

namespace {

// One thread's rows [n0, n1) of the input gradient and its columns [c0, c1)
// of the weight's (dweight by column ranges: deterministic for any thread
// count); the reference's loops for double and simd false.
template <typename T>
void backward_share(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight,
                    const T* rstd, int N, int C, int64_t n0, int64_t n1, int64_t c0, int64_t c1,
                    bool simd) {
  if constexpr (std::is_same_v<T, float>) {
    if (simd) {
      // One thread owns every row and column: the weight's gradient in the
      // rows' pass, while dy and x are in L1 (a second pass read them again:
      // RMSNorm backward went from 0.58 to 0.83 of memcpy at AVX2, 1 thread).
      const bool whole = n0 == 0 && n1 == N && c0 == 0 && c1 == C;
      internal::rmsnorm_backward_rows(dinp + n0 * C, whole ? dweight : nullptr, dout + n0 * C,
                                      inp + n0 * C, weight, rstd + n0, n1 - n0, C);
      if (!whole && c0 < c1)
        internal::rmsnorm_dweight(dweight + c0, dout + c0, inp + c0, rstd, N, C, c1 - c0);
      return;
    }
  }
  for (int64_t n = n0; n < n1; ++n) {
    const T* x = inp + n * C;
    const T* dy = dout + n * C;
    T* dx = dinp + n * C;
    const T r = rstd[n];
    T dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int c = 0; c < C; ++c) dot += weight[c] * dy[c] * x[c];
    const T k = r * r * r * dot / C;
#pragma omp simd
    for (int c = 0; c < C; ++c) dx[c] += r * weight[c] * dy[c] - k * x[c];
  }
  for (int n = 0; c0 < c1 && n < N; ++n) {
    const T* x = inp + static_cast<int64_t>(n) * C;
    const T* dy = dout + static_cast<int64_t>(n) * C;
    const T r = rstd[n];
    for (int64_t c = c0; c < c1; ++c) dweight[c] += dy[c] * x[c] * r;
  }
}

}  // namespace

// y = w * x * r with r = (mean(x^2) + eps)^-1/2, so
// dx_i = r * w_i dy_i - (r^3 / C) * x_i * sum_j w_j dy_j x_j.
template <typename T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight,
                      const T* rstd, int N, int C) {
  const bool simd = use_simd<T>();
#pragma omp parallel
  {
    const int threads = omp_get_num_threads(), tid = omp_get_thread_num();
    int64_t n0 = 0, n1 = 0, c0 = 0, c1 = 0;
    internal::chunk_range(N, threads, tid, &n0, &n1);
    // A frozen weight (LoRA) has no gradient.
    if (dweight != nullptr) internal::chunk_range(C, threads, tid, &c0, &c1);
    backward_share(dinp, dweight, dout, inp, weight, rstd, N, C, n0, n1, c0, c1, simd);
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
