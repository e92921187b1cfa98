// The exp-based element-wise kernels on Highway, compiled once per target
// (foreach_target.h includes this file again for each) and dispatched at
// run time: softmax-cross-entropy's rows, attention's softmax rows, SwiGLU.
// The functions and their shapes: kernels/simd_kernels.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/simd_exp.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cmath>

#include "hwy/highway.h"
#include "kernels/simd_kernels.h"
#include "kernels/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace trainscope::kernels::HWY_NAMESPACE {
namespace {

// max over row[0, n): exact in any order; a NaN never wins, as in
// `x > max ? x : max` (Max's second operand is kept when either is NaN).
// Four running maxima: one waits on Max's latency (4 cycles) every vector,
// and the pass over a head row, all of it from memory, took a third of
// softmax-cross-entropy's time at AVX2 (perf, 2026-11-28).
HWY_INLINE float RowMax(const float* HWY_RESTRICT row, int64_t n) {
  const Df d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto m0 = hn::Set(d, row[0]), m1 = m0, m2 = m0, m3 = m0;
  int64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    Prefetch(row + i + kPrefetchAhead);  // a row comes from L3 or memory: fetched ahead
    Prefetch(row + i + 2 * N + kPrefetchAhead);
    m0 = hn::Max(hn::LoadU(d, row + i), m0);
    m1 = hn::Max(hn::LoadU(d, row + i + N), m1);
    m2 = hn::Max(hn::LoadU(d, row + i + 2 * N), m2);
    m3 = hn::Max(hn::LoadU(d, row + i + 3 * N), m3);
  }
  for (; i + N <= n; i += N) m0 = hn::Max(hn::LoadU(d, row + i), m0);
  const auto vmax = hn::Max(hn::Max(m0, m1), hn::Max(m2, m3));
  float mx = hn::GetLane(hn::MaxOfLanes(d, vmax));
  for (; i < n; ++i) mx = row[i] > mx ? row[i] : mx;
  return mx;
}

// row[j] = exp(row[j] - mx) in place; returns their sum in Sum16's lanes.
// `ahead` > 0 fetches row + ahead along (the next row's max pass then reads
// from the cache while this row's exponentials hide the memory's latency).
HWY_INLINE float ExpSum(float* HWY_RESTRICT row, int64_t n, float mx, int64_t ahead = 0) {
  const Df d;
  const auto vm = hn::Set(d, mx);
  Sum16 s;
  int64_t i = 0;
  for (; i + static_cast<int64_t>(kSumLanes) <= n; i += kSumLanes) {
    if (ahead > 0) Prefetch(row + i + ahead);  // 16 floats: one cache line
    for (size_t k = 0; k < Sum16::kVecs; ++k) {
      float* at = row + i + k * Sum16::kN;
      const auto e = FastExp(d, hn::Sub(hn::LoadU(d, at), vm));
      hn::StoreU(e, d, at);
      s.acc[k] = hn::Add(s.acc[k], e);
    }
  }
  if (i < n) {
    TailBlock tail(row + i, static_cast<size_t>(n - i), mx);
    for (size_t k = 0; k < Sum16::kVecs; ++k) {
      float* at = tail.in + k * Sum16::kN;
      hn::Store(FastExp(d, hn::Sub(hn::Load(d, at), vm)), d, at);
    }
    tail.CopyOut(row + i);
    std::fill(tail.in + tail.n, tail.in + kSumLanes, 0.0f);  // the padding adds nothing
    for (size_t k = 0; k < Sum16::kVecs; ++k) {
      s.acc[k] = hn::Add(s.acc[k], hn::Load(d, tail.in + k * Sum16::kN));
    }
  }
  return s.Total();
}

template <class D>
HWY_INLINE void ScaleVec(D d, float* HWY_RESTRICT p, float k) {
  hn::StoreU(hn::Mul(hn::LoadU(d, p), hn::Set(d, k)), d, p);
}

template <class D>
HWY_INLINE void ScaleToBf16Vec(D d, uint16_t* HWY_RESTRICT out, const float* HWY_RESTRICT p,
                               float k) {
  hn::StoreU(ToBf16(d, hn::Mul(hn::LoadU(d, p), hn::Set(d, k))), hn::Rebind<uint16_t, D>(), out);
}

template <class D>
HWY_INLINE void ExpVec(D d, float* HWY_RESTRICT p, float m) {
  hn::StoreU(FastExp(d, hn::Sub(hn::LoadU(d, p), hn::Set(d, m))), d, p);
}

// ds = p (ds - dot) scale
template <class D>
HWY_INLINE void DsoftmaxVec(D d, float* HWY_RESTRICT ds, const float* HWY_RESTRICT p, float dot,
                            float scale) {
  const auto v = hn::Mul(hn::LoadU(d, p), hn::Sub(hn::LoadU(d, ds), hn::Set(d, dot)));
  hn::StoreU(hn::Mul(v, hn::Set(d, scale)), d, ds);
}

// sigmoid(g) = 1 / (1 + exp(-g))
template <class D, class V = hn::Vec<D>>
HWY_INLINE V Sigmoid(D d, V g) {
  const V one = hn::Set(d, 1.0f);
  return hn::Div(one, hn::Add(one, FastExp(d, hn::Neg(g))));
}

// out = silu(gate) up = gate s up
template <class D>
HWY_INLINE void SwigluVec(D d, float* HWY_RESTRICT o, const float* HWY_RESTRICT g,
                          const float* HWY_RESTRICT u) {
  const auto gv = hn::LoadU(d, g);
  hn::StoreU(hn::Mul(hn::Mul(gv, Sigmoid(d, gv)), hn::LoadU(d, u)), d, o);
}

// silu'(g) = s (1 + g (1 - s)): dgate += dout up s (1 + g (1 - s)), dup += dout g s
template <class D>
HWY_INLINE void DswigluVec(D d, float* HWY_RESTRICT dg, float* HWY_RESTRICT du,
                           const float* HWY_RESTRICT dout, const float* HWY_RESTRICT g,
                           const float* HWY_RESTRICT u) {
  const auto one = hn::Set(d, 1.0f);
  const auto gv = hn::LoadU(d, g), dv = hn::LoadU(d, dout);
  const auto s = Sigmoid(d, gv);
  const auto slope = hn::MulAdd(gv, hn::Sub(one, s), one);
  hn::StoreU(hn::MulAdd(hn::Mul(hn::Mul(dv, hn::LoadU(d, u)), s), slope, hn::LoadU(d, dg)), d, dg);
  hn::StoreU(hn::MulAdd(dv, hn::Mul(gv, s), hn::LoadU(d, du)), d, du);
}

}  // namespace

float XentExpRow(float* HWY_RESTRICT row, int64_t n, float* max) {
  *max = RowMax(row, n);
  return ExpSum(row, n, *max, n);  // rows are contiguous: the next one fetched
}

void ScaleRow(float* HWY_RESTRICT row, int64_t n, float k) {
  ForLanes(n, [&](auto d, int64_t i) HWY_ATTR { ScaleVec(d, row + i, k); });
}

void ScaleRowToBf16(uint16_t* HWY_RESTRICT out, const float* HWY_RESTRICT row, int64_t n, float k) {
  ForLanes(n, [&](auto d, int64_t i) HWY_ATTR { ScaleToBf16Vec(d, out + i, row + i, k); });
}

// A tile of attention's scores P [R, kmax]: row i is query t = r0 + i, keys
// [0, t] its own, the rest set to 0.
void SoftmaxTile(float* HWY_RESTRICT P, float* HWY_RESTRICT lse, int r0, int R, int kmax) {
  for (int i = 0; i < R; ++i) {
    float* row = P + static_cast<int64_t>(i) * kmax;
    const int len = r0 + i + 1;
    const float mx = RowMax(row, len);
    const float sum = ExpSum(row, len, mx);
    const float inv = 1.0f / sum;
    ForLanes(len, [&](auto d, int64_t j) HWY_ATTR { ScaleVec(d, row + j, inv); });
    std::fill(row + len, row + kmax, 0.0f);
    lse[r0 + i] = mx + std::log(sum);
  }
}

void ExpTile(float* HWY_RESTRICT P, const float* HWY_RESTRICT lse, int r0, int R, int kmax) {
  for (int i = 0; i < R; ++i) {
    float* row = P + static_cast<int64_t>(i) * kmax;
    const int len = r0 + i + 1;
    const float m = lse[r0 + i];
    ForLanes(len, [&](auto d, int64_t j) HWY_ATTR { ExpVec(d, row + j, m); });
    std::fill(row + len, row + kmax, 0.0f);
  }
}

void SoftmaxBackwardTile(float* HWY_RESTRICT dS, const float* HWY_RESTRICT P, int r0, int R,
                         int kmax, float scale) {
  const auto term = [](const hn::Vec<Df>* v, hn::Vec<Df> acc)
                        HWY_ATTR { return hn::MulAdd(v[0], v[1], acc); };
  for (int i = 0; i < R; ++i) {
    float* ds = dS + static_cast<int64_t>(i) * kmax;
    const float* p = P + static_cast<int64_t>(i) * kmax;
    const int len = r0 + i + 1;
    const float* in[2] = {ds, p};
    const float dot = SumOf(in, len, term);
    ForLanes(len, [&](auto d, int64_t j) HWY_ATTR { DsoftmaxVec(d, ds + j, p + j, dot, scale); });
    std::fill(ds + len, ds + kmax, 0.0f);
  }
}

void SwigluForwardRows(float* HWY_RESTRICT out, const float* HWY_RESTRICT gu, int64_t rows, int F) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* g = gu + r * 2 * F;
    float* o = out + r * F;
    ForLanes(F, [&](auto d, int64_t i) HWY_ATTR {
      Prefetch(g + 2 * F + i);  // the next row's gate and up
      Prefetch(g + 3 * F + i);
      SwigluVec(d, o + i, g + i, g + F + i);
    });
  }
}

void SwigluBackwardRows(float* HWY_RESTRICT dgu, const float* HWY_RESTRICT dout,
                        const float* HWY_RESTRICT gu, int64_t rows, int F) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* g = gu + r * 2 * F;
    float* dg = dgu + r * 2 * F;
    const float* dy = dout + r * F;
    ForLanes(F, [&](auto d, int64_t i) HWY_ATTR {
      Prefetch(g + 2 * F + i);  // the next row's gate, up, their gradients and dout
      Prefetch(g + 3 * F + i);
      Prefetch(dg + 2 * F + i);
      Prefetch(dg + 3 * F + i);
      Prefetch(dy + F + i);
      DswigluVec(d, dg + i, dg + F + i, dy + i, g + i, g + F + i);
    });
  }
}

}  // namespace trainscope::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace trainscope::kernels {

HWY_EXPORT(XentExpRow);
HWY_EXPORT(ScaleRow);
HWY_EXPORT(ScaleRowToBf16);
HWY_EXPORT(SoftmaxTile);
HWY_EXPORT(ExpTile);
HWY_EXPORT(SoftmaxBackwardTile);
HWY_EXPORT(SwigluForwardRows);
HWY_EXPORT(SwigluBackwardRows);

namespace internal {

float xent_exp_row(float* row, int64_t n, float* max) {
  return HWY_DYNAMIC_DISPATCH(XentExpRow)(row, n, max);
}
void scale_row(float* row, int64_t n, float k) { HWY_DYNAMIC_DISPATCH(ScaleRow)(row, n, k); }
void scale_row_to_bf16(uint16_t* out, const float* row, int64_t n, float k) {
  HWY_DYNAMIC_DISPATCH(ScaleRowToBf16)(out, row, n, k);
}
void softmax_tile(float* P, float* lse, int r0, int R, int kmax) {
  HWY_DYNAMIC_DISPATCH(SoftmaxTile)(P, lse, r0, R, kmax);
}
void exp_tile(float* P, const float* lse, int r0, int R, int kmax) {
  HWY_DYNAMIC_DISPATCH(ExpTile)(P, lse, r0, R, kmax);
}
void softmax_backward_tile(float* dS, const float* P, int r0, int R, int kmax, float scale) {
  HWY_DYNAMIC_DISPATCH(SoftmaxBackwardTile)(dS, P, r0, R, kmax, scale);
}
void swiglu_forward_rows(float* out, const float* gu, int64_t rows, int F) {
  HWY_DYNAMIC_DISPATCH(SwigluForwardRows)(out, gu, rows, F);
}
void swiglu_backward_rows(float* dgu, const float* dout, const float* gu, int64_t rows, int F) {
  HWY_DYNAMIC_DISPATCH(SwigluBackwardRows)(dgu, dout, gu, rows, F);
}

}  // namespace internal
}  // namespace trainscope::kernels
#endif  // HWY_ONCE
