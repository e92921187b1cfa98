#include "kernels/swiglu.h"

#include <type_traits>

#include "kernels/parallel.h"
#include "kernels/simd_kernels.h"

namespace trainscope::kernels {

// float runs the dispatched vector code (kernels/simd_kernels.h) unless the
// reference is asked for; double, and that reference, run the loops below.
template <typename T>
void swiglu_forward(T* out, const T* gu, int N, int F) {
  if constexpr (std::is_same_v<T, float>) {
    if (internal::simd_enabled()) {
      return internal::parallel_ranges(N, [&](int64_t n0, int64_t n1) {
        internal::swiglu_forward_rows(out + n0 * F, gu + n0 * 2 * F, n1 - n0, F);
      });
    }
  }
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const T* g = gu + static_cast<int64_t>(n) * 2 * F;
    const T* u = g + F;
    T* o = out + static_cast<int64_t>(n) * F;
#pragma omp simd
    for (int f = 0; f < F; ++f) {
      const T s = T(1) / (T(1) + internal::fast_exp(-g[f]));
      o[f] = g[f] * s * u[f];
    }
  }
}

// silu(g) = g s with s = sigmoid(g); silu'(g) = s (1 + g (1 - s)).
template <typename T>
void swiglu_backward(T* dgu, const T* dout, const T* gu, int N, int F) {
  if constexpr (std::is_same_v<T, float>) {
    if (internal::simd_enabled()) {
      return internal::parallel_ranges(N, [&](int64_t n0, int64_t n1) {
        internal::swiglu_backward_rows(dgu + n0 * 2 * F, dout + n0 * F, gu + n0 * 2 * F, n1 - n0,
                                       F);
      });
    }
  }
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const T* g = gu + static_cast<int64_t>(n) * 2 * F;
    const T* u = g + F;
    const T* d = dout + static_cast<int64_t>(n) * F;
    T* dg = dgu + static_cast<int64_t>(n) * 2 * F;
    T* du = dg + F;
#pragma omp simd
    for (int f = 0; f < F; ++f) {
      const T s = T(1) / (T(1) + internal::fast_exp(-g[f]));
      const T silu = g[f] * s;
      dg[f] += d[f] * u[f] * s * (T(1) + g[f] * (T(1) - s));
      du[f] += d[f] * silu;
    }
  }
}

template void swiglu_forward<float>(float*, const float*, int, int);
template void swiglu_forward<double>(double*, const double*, int, int);
template void swiglu_backward<float>(float*, const float*, const float*, int, int);
template void swiglu_backward<double>(double*, const double*, const double*, int, int);

}  // namespace trainscope::kernels
