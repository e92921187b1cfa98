#include "kernels/lora.h"

#include <cmath>

#include "kernels/gemm.h"

namespace trainscope::kernels {

template <typename T>
void lora_forward(T* out, int ldo, T* u, const T* inp, const T* A, const T* B, int N, int C, int OC,
                  int r, T scale) {
  internal::gemm(false, true, N, r, C, T(1), inp, C, A, C, T(0), u, r);
  internal::gemm(false, true, N, OC, r, scale, u, r, B, r, T(1), out, ldo);
}

template <typename T>
void lora_backward(T* dinp, T* dA, T* dB, T* du, const T* dout, int ldo, const T* inp, const T* u,
                   const T* A, const T* B, int N, int C, int OC, int r, T scale) {
  internal::gemm(true, false, OC, r, N, scale, dout, ldo, u, r, T(1), dB, r);
  internal::gemm(false, false, N, r, OC, scale, dout, ldo, B, r, T(0), du, r);
  internal::gemm(true, false, r, C, N, T(1), du, r, inp, C, T(1), dA, C);
  if (dinp != nullptr) internal::gemm(false, false, N, C, r, T(1), du, r, A, C, T(1), dinp, C);
}

template <typename T>
void lora_merge(T* W, const T* A, const T* B, int C, int OC, int r, T scale) {
  internal::gemm(false, false, OC, C, r, scale, B, r, A, C, T(1), W, C);
}

namespace {
// splitmix64's finaliser: a well-mixed 64-bit hash of (seed, i).
inline uint64_t mix(uint64_t seed, uint64_t i) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
// keep(i) when the hash's top 53 bits, as a fraction of 1, reach p.
inline bool keep(uint64_t seed, int64_t i, double p) {
  return static_cast<double>(mix(seed, static_cast<uint64_t>(i)) >> 11) * 0x1.0p-53 >= p;
}
}  // namespace

template <typename T>
void dropout_forward(T* out, const T* inp, int64_t n, float p, uint64_t seed) {
  const T s = T(1) / (T(1) - T(p));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = keep(seed, i, p) ? inp[i] * s : T(0);
}

template <typename T>
void dropout_backward(T* dinp, const T* dout, int64_t n, float p, uint64_t seed) {
  const T s = T(1) / (T(1) - T(p));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    if (keep(seed, i, p)) dinp[i] += dout[i] * s;
  }
}

#define TS_INSTANTIATE(T)                                                                          \
  template void lora_forward<T>(T*, int, T*, const T*, const T*, const T*, int, int, int, int, T); \
  template void lora_backward<T>(T*, T*, T*, T*, const T*, int, const T*, const T*, const T*,      \
                                 const T*, int, int, int, int, T);                                 \
  template void lora_merge<T>(T*, const T*, const T*, int, int, int, T);                           \
  template void dropout_forward<T>(T*, const T*, int64_t, float, uint64_t);                        \
  template void dropout_backward<T>(T*, const T*, int64_t, float, uint64_t);
TS_INSTANTIATE(float)
TS_INSTANTIATE(double)
#undef TS_INSTANTIATE

}  // namespace trainscope::kernels
