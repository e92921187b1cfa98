#include "kernels/rope.h"

#include <cmath>
#include <type_traits>

#include "kernels/parallel.h"
#include "kernels/simd_kernels.h"

namespace trainscope::kernels {

template <typename T>
void rope_tables(T* cos_table, T* sin_table, int T_max, int hd, float theta) {
  const int half = hd / 2;
  for (int t = 0; t < T_max; ++t) {
    for (int i = 0; i < half; ++i) {
      // As Hugging Face: inv_freq = 1 / theta^(2i / hd), angle = t * inv_freq.
      const double inv_freq = 1.0 / std::pow(static_cast<double>(theta), 2.0 * i / hd);
      const double angle = t * inv_freq;
      cos_table[t * half + i] = static_cast<T>(std::cos(angle));
      sin_table[t * half + i] = static_cast<T>(std::sin(angle));
    }
  }
}

namespace {
// sign = +1 rotates forward by the angle, -1 applies the transpose.
template <typename T>
void rotate(T* x, const T* cos_table, const T* sin_table, int B, int Tn, int NH, int hd, int ld,
            T sign) {
  const int half = hd / 2;
  // float: the dispatched vector code, each thread's tokens in one call,
  // unless the reference is asked for (kernels/simd_kernels.h).
  if constexpr (std::is_same_v<T, float>) {
    if (internal::simd_enabled()) {
      return internal::parallel_ranges(int64_t{B} * Tn, [&](int64_t t0, int64_t t1) {
        internal::rope_rows(x, cos_table, sin_table, t0, t1, Tn, NH, hd, ld, sign);
      });
    }
  }
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < Tn; ++t) {
      const T* cs = cos_table + t * half;
      const T* sn = sin_table + t * half;
      T* row = x + (static_cast<int64_t>(b) * Tn + t) * ld;
      for (int h = 0; h < NH; ++h) {
        T* v = row + h * hd;
#pragma omp simd
        for (int i = 0; i < half; ++i) {
          const T x1 = v[i], x2 = v[i + half];
          const T s = sign * sn[i];
          v[i] = x1 * cs[i] - x2 * s;
          v[i + half] = x2 * cs[i] + x1 * s;
        }
      }
    }
  }
}
}  // namespace

template <typename T>
void rope_forward(T* x, const T* cos_table, const T* sin_table, int B, int Tn, int NH, int hd,
                  int ld) {
  rotate(x, cos_table, sin_table, B, Tn, NH, hd, ld, T(1));
}

template <typename T>
void rope_backward(T* dx, const T* cos_table, const T* sin_table, int B, int Tn, int NH, int hd,
                   int ld) {
  rotate(dx, cos_table, sin_table, B, Tn, NH, hd, ld, T(-1));
}

template void rope_tables<float>(float*, float*, int, int, float);
template void rope_tables<double>(double*, double*, int, int, float);
template void rope_forward<float>(float*, const float*, const float*, int, int, int, int, int);
template void rope_forward<double>(double*, const double*, const double*, int, int, int, int, int);
template void rope_backward<float>(float*, const float*, const float*, int, int, int, int, int);
template void rope_backward<double>(double*, const double*, const double*, int, int, int, int, int);

}  // namespace trainscope::kernels
