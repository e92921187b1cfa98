// Internal helpers for the kernels' OpenMP threading and vector math.
//
// Determinism rule: work is split into contiguous chunks, one per thread, in
// thread order; any cross-row reduction keeps one partial per thread and
// combines the partials in thread order. With the same thread count the
// result is bit-identical from run to run.
#ifndef TRAINSCOPE_KERNELS_PARALLEL_H_
#define TRAINSCOPE_KERNELS_PARALLEL_H_

#include <omp.h>

#include <bit>
#include <cmath>
#include <cstdint>

namespace trainscope::kernels::internal {

// Upper bound on OpenMP threads for the per-thread partial arrays that live on
// the stack (so kernels never allocate).
inline constexpr int kMaxThreads = 256;

inline int num_threads() {
  const int n = omp_get_max_threads();
  return n < kMaxThreads ? n : kMaxThreads;
}

// [begin, end) of chunk `index` when `total` items are split into `parts`.
inline void chunk_range(int64_t total, int parts, int index, int64_t* begin, int64_t* end) {
  const int64_t base = total / parts, extra = total % parts;
  *begin = index * base + (index < extra ? index : extra);
  *end = *begin + base + (index < extra ? 1 : 0);
}

// f(begin, end) on each OpenMP thread with its contiguous share of [0, n),
// split as chunk_range splits it.
template <typename F>
void parallel_ranges(int64_t n, const F& f) {
#pragma omp parallel
  {
    int64_t begin = 0, end = 0;
    chunk_range(n, omp_get_num_threads(), omp_get_thread_num(), &begin, &end);
    if (begin < end) f(begin, end);
  }
}

// exp(x) for float, vectorizable by the compiler where it will (the
// reference templates'; the dispatched kernels run the same operations on
// Highway: kernels/simd_math-inl.h) (Cephes expf: range reduction by ln 2 and a
// degree-6 polynomial; ~1 ulp on [-87, 88]). Clamped so it never returns inf
// or a denormal. The reduction rounds x / ln 2 to nearest with the 1.5 * 2^23
// trick instead of floor(): floorf is a library call GCC will not vectorize
// without -ffast-math, and the remainder in [-ln2/2, ln2/2] suits the
// polynomial as well.
inline float fast_exp(float x) {
  x = x < 88.3762626647949f ? x : 88.3762626647949f;
  x = x > -87.3365447505531f ? x : -87.3365447505531f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  float fx = (x * 1.44269504088896341f + kRound) - kRound;
  x = x - fx * 0.693359375f + fx * 2.12194440e-4f;
  const float z = x * x;
  float y = 1.9875691500e-4f;
  y = y * x + 1.3981999507e-3f;
  y = y * x + 8.3334519073e-3f;
  y = y * x + 4.1665795894e-2f;
  y = y * x + 1.6666665459e-1f;
  y = y * x + 5.0000001201e-1f;
  y = y * z + x + 1.0f;
  const int32_t n = static_cast<int32_t>(fx);
  return y * std::bit_cast<float>((n + 127) << 23);
}
inline double fast_exp(double x) { return std::exp(x); }

}  // namespace trainscope::kernels::internal

#endif  // TRAINSCOPE_KERNELS_PARALLEL_H_
