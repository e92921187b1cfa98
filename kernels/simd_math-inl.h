// Vector math shared by the Highway kernels (simd_exp.cpp, simd_stream.cpp),
// compiled once per target: included again for each one by foreach_target.h,
// hence no ordinary include guard (Highway's toggle instead).
//
// Two rules keep every level's results those of the others:
// - the same operations in the same order on every target, with FMA where
//   the source says MulAdd (translation units built with -ffp-contract=off,
//   so the compiler fuses nothing of its own); AVX2 and AVX-512 have FMA,
//   so they agree to the bit, the SSE4 and scalar fallbacks round a
//   product more;
// - sums kept in 16 lanes whatever the vector width (Sum16): lane j adds
//   the elements j, j + 16, ... in order, and the 16 lanes are added in one
//   fixed tree. A row's sum is the same bits on AVX2 (two 8-lane vectors)
//   and AVX-512 (one 16-lane vector), so hosts of different CPUs compute
//   the same global norm, clip alike and stay identical replicas.
#if defined(TRAINSCOPE_KERNELS_SIMD_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TRAINSCOPE_KERNELS_SIMD_MATH_INL_H_
#undef TRAINSCOPE_KERNELS_SIMD_MATH_INL_H_
#else
#define TRAINSCOPE_KERNELS_SIMD_MATH_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/cache_control.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace trainscope::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using Df = hn::ScalableTag<float>;
using D1 = hn::CappedTag<float, 1>;  // one lane: the elements after the last whole vector
inline constexpr size_t kSumLanes = 16;

// internal::fast_exp (kernels/parallel.h), the same operations lane by lane:
// Cephes expf, x / ln 2 rounded with the 1.5 * 2^23 trick, a degree-6
// polynomial, clamped so that it never returns inf or a denormal. Not
// Highway's own Exp, which rounds differently in the last place: these are
// the exponentials the float kernels computed before they were vectorized.
template <class D, class V = hn::Vec<D>>
HWY_INLINE V FastExp(D d, V x) {
  const hn::RebindToSigned<D> di;
  x = hn::Min(x, hn::Set(d, 88.3762626647949f));
  x = hn::Max(x, hn::Set(d, -87.3365447505531f));
  const V round = hn::Set(d, 12582912.0f);  // 1.5 * 2^23
  const V t = hn::MulAdd(x, hn::Set(d, 1.44269504088896341f), round);
  const V fx = hn::Sub(t, round);
  x = hn::MulAdd(fx, hn::Set(d, 2.12194440e-4f), hn::NegMulAdd(fx, hn::Set(d, 0.693359375f), x));
  const V z = hn::Mul(x, x);
  V y = hn::Set(d, 1.9875691500e-4f);
  y = hn::MulAdd(y, x, hn::Set(d, 1.3981999507e-3f));
  y = hn::MulAdd(y, x, hn::Set(d, 8.3334519073e-3f));
  y = hn::MulAdd(y, x, hn::Set(d, 4.1665795894e-2f));
  y = hn::MulAdd(y, x, hn::Set(d, 1.6666665459e-1f));
  y = hn::MulAdd(y, x, hn::Set(d, 5.0000001201e-1f));
  y = hn::Add(hn::MulAdd(y, z, x), hn::Set(d, 1.0f));
  // 2^fx: t = 1.5 * 2^23 + fx holds fx in its low mantissa bits, and the
  // bits of 1.5 * 2^23 vanish shifted left by 23, so (bits(t) << 23) +
  // (127 << 23) is (fx + 127) << 23, the float 2^fx, without a conversion.
  const auto pow2 = hn::Add(hn::ShiftLeft<23>(hn::BitCast(di, t)), hn::Set(di, 127 << 23));
  return hn::Mul(y, hn::BitCast(d, pow2));
}

// float -> bf16 bits, round to nearest even, NaN kept a NaN: float_to_bf16
// (kernels/float16.h) lane by lane, narrowed to 16 bits.
template <class D, class V = hn::Vec<D>>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, D>> ToBf16(D d, V f) {
  const hn::RebindToUnsigned<D> du;
  const hn::RebindToSigned<D> di;
  const auto bits = hn::BitCast(du, f);
  const auto odd = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
  const auto rounded = hn::ShiftRight<16>(hn::Add(hn::Add(bits, hn::Set(du, 0x7fffu)), odd));
  const auto nan = hn::Or(hn::ShiftRight<16>(bits), hn::Set(du, 0x40u));
  const auto is_nan =
      hn::Gt(hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7fffffffu))), hn::Set(di, 0x7f800000));
  const auto out = hn::IfThenElse(hn::RebindMask(du, is_nan), nan, rounded);
  return hn::DemoteTo(hn::Rebind<uint16_t, D>(), hn::BitCast(di, out));  // all < 2^16
}

// A hint to fetch p's cache line (prefetches never fault, past an array's
// end included). The streaming kernels fetch the next row while they compute
// this one: on our VM the hardware's prefetchers alone left SwiGLU forward
// at half the speed the memory allows (1.51 -> 0.88 ms cold at AVX2).
HWY_INLINE void Prefetch(const float* p) { hwy::Prefetch(p); }
// How far ahead a long row is fetched: 4 KiB.
inline constexpr int64_t kPrefetchAhead = 1024;

// body(d, i) for i over [0, n): whole vectors, then one lane at a time (the
// same operations, so an element's result does not depend on where it is).
template <class Body>
HWY_INLINE void ForLanes(int64_t n, const Body& body) {
  const Df d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) body(d, i);
  for (; i < n; ++i) body(D1(), i);
}

// A sum kept in kSumLanes lanes (see the top of this file).
struct Sum16 {
  static constexpr size_t kN = hn::MaxLanes(Df());
  static constexpr size_t kVecs = kSumLanes / kN;
  static_assert(kN <= kSumLanes && kSumLanes % kN == 0, "vectors of at most 16 floats");
  hn::Vec<Df> acc[kVecs];

  Sum16() {
    for (size_t k = 0; k < kVecs; ++k) acc[k] = hn::Zero(Df());
  }
  // The 16 lanes added in one tree, the same on every target.
  float Total() const {
    HWY_ALIGN float lanes[kSumLanes];
    for (size_t k = 0; k < kVecs; ++k) hn::Store(acc[k], Df(), lanes + k * kN);
    for (size_t half = kSumLanes / 2; half > 0; half /= 2) {
      for (size_t j = 0; j < half; ++j) lanes[j] += lanes[j + half];
    }
    return lanes[0];
  }
};

// The last n < 16 elements of a row as one block: copied into a buffer
// padded with `pad`, so that they meet the same lanes as a whole block.
struct TailBlock {
  HWY_ALIGN float in[kSumLanes];
  size_t n;
  TailBlock(const float* src, size_t count, float pad) : n(count) {
    for (size_t j = 0; j < kSumLanes; ++j) in[j] = j < n ? src[j] : pad;
  }
  void CopyOut(float* dst) const { std::memcpy(dst, in, n * sizeof(float)); }
};

// The sum over i < n of term(v, acc), v[a] the vector of in[a] at i, in
// Sum16's lanes; the elements after the last whole block are padded with
// zeros, so term(zeros, acc) must be acc (a product is). A row's dot
// product: term = MulAdd(v[0], v[1], acc).
// `ahead` > 0 fetches each input that far ahead (the next row's).
template <size_t kIn, class Term>
HWY_INLINE float SumOf(const float* const (&in)[kIn], size_t n, const Term& term,
                       int64_t ahead = 0) {
  const Df d;
  Sum16 s;
  hn::Vec<Df> v[kIn];
  size_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes) {
    for (size_t a = 0; ahead > 0 && a < kIn; ++a) Prefetch(in[a] + i + ahead);
    for (size_t k = 0; k < Sum16::kVecs; ++k) {
      for (size_t a = 0; a < kIn; ++a) v[a] = hn::LoadU(d, in[a] + i + k * Sum16::kN);
      s.acc[k] = term(v, s.acc[k]);
    }
  }
  if (i == n) return s.Total();
  HWY_ALIGN float tail[kIn][kSumLanes] = {};
  for (size_t a = 0; a < kIn; ++a) std::memcpy(tail[a], in[a] + i, (n - i) * sizeof(float));
  for (size_t k = 0; k < Sum16::kVecs; ++k) {
    for (size_t a = 0; a < kIn; ++a) v[a] = hn::Load(d, tail[a] + k * Sum16::kN);
    s.acc[k] = term(v, s.acc[k]);
  }
  return s.Total();
}

}  // namespace trainscope::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
