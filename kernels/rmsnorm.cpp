#include "kernels/rmsnorm.h"

#include <cmath>

#include "kernels/parallel.h"

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

}  // namespace

template <typename T>
void rmsnorm_forward(T* out, T* rstd, const T* inp, const T* weight, int N, int C, float eps) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const int64_t at = static_cast<int64_t>(n) * C;
    rstd[n] = rmsnorm_row(out + at, inp + at, weight, C, eps);
  }
}

template <typename T>
void add_rmsnorm_forward(T* x, T* out, T* rstd, const T* residual, const T* weight, int N, int C,
                         float eps) {
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

// y = w * x * r with r = (mean(x^2) + eps)^-1/2, so
// dx_i = r * w_i dy_i - (r^3 / C) * x_i * sum_j w_j dy_j x_j.
template <typename T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight,
                      const T* rstd, int N, int C) {
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int n = 0; n < N; ++n) {
      const T* x = inp + static_cast<int64_t>(n) * C;
      const T* dy = dout + static_cast<int64_t>(n) * C;
      T* dx = dinp + static_cast<int64_t>(n) * C;
      const T r = rstd[n];
      T dot = 0;
#pragma omp simd reduction(+ : dot)
      for (int c = 0; c < C; ++c) dot += weight[c] * dy[c] * x[c];
      const T k = r * r * r * dot / C;
#pragma omp simd
      for (int c = 0; c < C; ++c) dx[c] += r * weight[c] * dy[c] - k * x[c];
    }
    // dweight by column ranges: deterministic for any thread count. A frozen
    // weight (LoRA) has none.
    int64_t c0 = 0, c1 = 0;
    if (dweight != nullptr) {
      internal::chunk_range(C, omp_get_num_threads(), omp_get_thread_num(), &c0, &c1);
    }
    for (int n = 0; n < N; ++n) {
      const T* x = inp + static_cast<int64_t>(n) * C;
      const T* dy = dout + static_cast<int64_t>(n) * C;
      const T r = rstd[n];
      for (int64_t c = c0; c < c1; ++c) dweight[c] += dy[c] * x[c] * r;
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
