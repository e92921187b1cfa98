// The streaming element-wise kernels on Highway, compiled once per target
// (foreach_target.h includes this file again for each) and dispatched at
// run time: RMSNorm's rows, RoPE's rows, AdamW, the global norm's sum of
// squares, rounding to bf16. The functions and their shapes:
// kernels/simd_kernels.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/simd_stream.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <cmath>

#include "hwy/highway.h"
#include "kernels/simd_kernels.h"
#include "kernels/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace trainscope::kernels::HWY_NAMESPACE {

using V = hn::Vec<Df>;

namespace {

// One row: y = w x r, returns r = (mean(x^2) + eps)^-1/2. Rows are
// contiguous: the next row's x is fetched ahead.
HWY_INLINE float NormRow(float* HWY_RESTRICT y, const float* HWY_RESTRICT x,
                         const float* HWY_RESTRICT w, int C, float eps) {
  const float* in[2] = {x, x};
  const auto square = [](const V* v, V acc) HWY_ATTR { return hn::MulAdd(v[0], v[1], acc); };
  const float ss = SumOf(in, C, square, C);
  const float r = 1.0f / std::sqrt(ss / static_cast<float>(C) + eps);
  ForLanes(C, [&](auto d, int64_t c) HWY_ATTR {
    Prefetch(y + C + c);  // the next row's output: its lines are read before they are written
    const auto xr = hn::Mul(hn::LoadU(d, x + c), hn::Set(d, r));
    hn::StoreU(hn::Mul(hn::LoadU(d, w + c), xr), d, y + c);
  });
  return r;
}

}  // namespace

void RmsnormRows(float* HWY_RESTRICT y, float* HWY_RESTRICT rstd, const float* HWY_RESTRICT x,
                 const float* HWY_RESTRICT w, int64_t rows, int C, float eps) {
  for (int64_t n = 0; n < rows; ++n) rstd[n] = NormRow(y + n * C, x + n * C, w, C, eps);
}

void AddRmsnormRows(float* HWY_RESTRICT x, float* HWY_RESTRICT y, float* HWY_RESTRICT rstd,
                    const float* HWY_RESTRICT add, const float* HWY_RESTRICT w, int64_t rows, int C,
                    float eps) {
  for (int64_t n = 0; n < rows; ++n) {
    float* xn = x + n * C;
    const float* an = add + n * C;
    ForLanes(C, [&](auto d, int64_t c) HWY_ATTR {
      Prefetch(xn + C + c);  // the next row's
      Prefetch(an + C + c);
      hn::StoreU(hn::Add(hn::LoadU(d, xn + c), hn::LoadU(d, an + c)), d, xn + c);
    });
    rstd[n] = NormRow(y + n * C, xn, w, C, eps);
  }
}

// dx += r w dy - k x with k = r^3 / C sum(w dy x)
void RmsnormBackwardRows(float* HWY_RESTRICT dx, float* HWY_RESTRICT dw,
                         const float* HWY_RESTRICT dy, const float* HWY_RESTRICT x,
                         const float* HWY_RESTRICT w, const float* HWY_RESTRICT rstd, int64_t rows,
                         int C) {
  const auto term = [](const V* v, V acc)
                        HWY_ATTR { return hn::MulAdd(hn::Mul(v[0], v[1]), v[2], acc); };
  for (int64_t n = 0; n < rows; ++n) {
    const float *dyn = dy + n * C, *xn = x + n * C;
    float* dxn = dx + n * C;
    const float r = rstd[n];
    const float* in[3] = {w, dyn, xn};
    const float dot = SumOf(in, C, term, C);  // the next row's dy and x fetched ahead
    const float k = r * r * r * dot / static_cast<float>(C);
    ForLanes(C, [&](auto d, int64_t c) HWY_ATTR {
      const auto rwdy = hn::Mul(hn::Mul(hn::Set(d, r), hn::LoadU(d, w + c)), hn::LoadU(d, dyn + c));
      Prefetch(dxn + C + c);
      const auto xv = hn::LoadU(d, xn + c);
      const auto step = hn::NegMulAdd(hn::Set(d, k), xv, rwdy);
      hn::StoreU(hn::Add(hn::LoadU(d, dxn + c), step), d, dxn + c);
      if (dw != nullptr) {  // RmsnormDweight's operations: the row is in L1 now
        const auto dyx = hn::Mul(hn::LoadU(d, dyn + c), xv);
        hn::StoreU(hn::MulAdd(dyx, hn::Set(d, r), hn::LoadU(d, dw + c)), d, dw + c);
      }
    });
  }
}

// dw[c] += dy[c] x[c] r, row by row, over n columns of rows of stride C.
void RmsnormDweight(float* HWY_RESTRICT dw, const float* HWY_RESTRICT dy,
                    const float* HWY_RESTRICT x, const float* HWY_RESTRICT rstd, int64_t rows,
                    int C, int64_t n) {
  for (int64_t row = 0; row < rows; ++row) {
    const float *dyn = dy + row * C, *xn = x + row * C;
    const float r = rstd[row];
    ForLanes(n, [&](auto d, int64_t c) HWY_ATTR {
      Prefetch(dyn + C + c);  // the next row's
      Prefetch(xn + C + c);
      const auto dyx = hn::Mul(hn::LoadU(d, dyn + c), hn::LoadU(d, xn + c));
      hn::StoreU(hn::MulAdd(dyx, hn::Set(d, r), hn::LoadU(d, dw + c)), d, dw + c);
    });
  }
}

// (x1, x2) <- (x1 cos - x2 s, x2 cos + x1 s), s = sign sin, for tokens [t0,
// t1) of rows of stride ld, token t at position t % Tn; a token's cos and sin
// loaded once for all its heads.
void RopeRows(float* HWY_RESTRICT x, const float* HWY_RESTRICT cos_table,
              const float* HWY_RESTRICT sin_table, int64_t t0, int64_t t1, int Tn, int NH, int hd,
              int ld, float sign) {
  const int half = hd / 2;
  for (int64_t t = t0; t < t1; ++t) {
    float* row = x + t * ld;
    const float* cs = cos_table + (t % Tn) * half;
    const float* sn = sin_table + (t % Tn) * half;
    ForLanes(half, [&](auto d, int64_t i) HWY_ATTR {
      const auto c = hn::LoadU(d, cs + i);
      const auto s = hn::Mul(hn::Set(d, sign), hn::LoadU(d, sn + i));
      for (int h = 0; h < NH; ++h) {
        float* v = row + h * hd + i;
        const auto x1 = hn::LoadU(d, v), x2 = hn::LoadU(d, v + half);
        hn::StoreU(hn::NegMulAdd(x2, s, hn::Mul(x1, c)), d, v);
        hn::StoreU(hn::MulAdd(x1, s, hn::Mul(x2, c)), d, v + half);
      }
    });
  }
}

// PyTorch's AdamW order (kernels/adamw.cpp): g = grad * scale; m, v moved;
// p = p decay - step m / (sqrt(v) / sqrt(bc2) + eps).
void Adamw(float* HWY_RESTRICT p, const float* HWY_RESTRICT g, float* HWY_RESTRICT m,
           float* HWY_RESTRICT v, int64_t n, const internal::AdamwStep& s) {
  ForLanes(n, [&](auto d, int64_t i) HWY_ATTR {
    Prefetch(p + i + kPrefetchAhead);
    Prefetch(g + i + kPrefetchAhead);
    Prefetch(m + i + kPrefetchAhead);
    Prefetch(v + i + kPrefetchAhead);
    const auto gi = hn::Mul(hn::LoadU(d, g + i), hn::Set(d, s.grad_scale));
    const auto mi = hn::MulAdd(hn::Set(d, s.beta1), hn::LoadU(d, m + i),
                               hn::Mul(hn::Set(d, 1.0f - s.beta1), gi));
    const auto vi = hn::MulAdd(hn::Set(d, s.beta2), hn::LoadU(d, v + i),
                               hn::Mul(hn::Mul(hn::Set(d, 1.0f - s.beta2), gi), gi));
    hn::StoreU(mi, d, m + i);
    hn::StoreU(vi, d, v + i);
    const auto denom = hn::MulAdd(hn::Sqrt(vi), hn::Set(d, s.inv_sqrt_bc2), hn::Set(d, s.eps));
    const auto update = hn::Div(hn::Mul(hn::Set(d, s.step), mi), denom);
    hn::StoreU(hn::MulSub(hn::LoadU(d, p + i), hn::Set(d, s.decay), update), d, p + i);
  });
}

double SumSquares(const float* HWY_RESTRICT g, int64_t n) {
  constexpr int64_t kBlock = 1024;  // float lanes at vector speed, blocks added in double
  double total = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const float* in[2] = {g + b, g + b};
    const int64_t len = n - b < kBlock ? n - b : kBlock;
    const auto square = [](const V* v, V acc) HWY_ATTR { return hn::MulAdd(v[0], v[1], acc); };
    total += SumOf(in, len, square, kBlock);  // the next block fetched ahead
  }
  return total;
}

void ToBf16Row(uint16_t* HWY_RESTRICT dst, const float* HWY_RESTRICT src, int64_t n) {
  ForLanes(n, [&](auto d, int64_t i) HWY_ATTR {
    hn::StoreU(ToBf16(d, hn::LoadU(d, src + i)), hn::Rebind<uint16_t, decltype(d)>(), dst + i);
  });
}

}  // namespace trainscope::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace trainscope::kernels {

HWY_EXPORT(RmsnormRows);
HWY_EXPORT(AddRmsnormRows);
HWY_EXPORT(RmsnormBackwardRows);
HWY_EXPORT(RmsnormDweight);
HWY_EXPORT(RopeRows);
HWY_EXPORT(Adamw);
HWY_EXPORT(SumSquares);
HWY_EXPORT(ToBf16Row);

namespace internal {

void rmsnorm_rows(float* y, float* rstd, const float* x, const float* w, int64_t rows, int C,
                  float eps) {
  HWY_DYNAMIC_DISPATCH(RmsnormRows)(y, rstd, x, w, rows, C, eps);
}
void add_rmsnorm_rows(float* x, float* y, float* rstd, const float* add, const float* w,
                      int64_t rows, int C, float eps) {
  HWY_DYNAMIC_DISPATCH(AddRmsnormRows)(x, y, rstd, add, w, rows, C, eps);
}
void rmsnorm_backward_rows(float* dx, float* dw, const float* dy, const float* x, const float* w,
                           const float* rstd, int64_t rows, int C) {
  HWY_DYNAMIC_DISPATCH(RmsnormBackwardRows)(dx, dw, dy, x, w, rstd, rows, C);
}
void rmsnorm_dweight(float* dw, const float* dy, const float* x, const float* rstd, int64_t rows,
                     int C, int64_t n) {
  HWY_DYNAMIC_DISPATCH(RmsnormDweight)(dw, dy, x, rstd, rows, C, n);
}
void rope_rows(float* x, const float* cos_table, const float* sin_table, int64_t t0, int64_t t1,
               int Tn, int NH, int hd, int ld, float sign) {
  HWY_DYNAMIC_DISPATCH(RopeRows)(x, cos_table, sin_table, t0, t1, Tn, NH, hd, ld, sign);
}
void adamw(float* p, const float* g, float* m, float* v, int64_t n, const AdamwStep& s) {
  HWY_DYNAMIC_DISPATCH(Adamw)(p, g, m, v, n, s);
}
double sum_squares(const float* g, int64_t n) { return HWY_DYNAMIC_DISPATCH(SumSquares)(g, n); }
void to_bf16(uint16_t* dst, const float* src, int64_t n) {
  HWY_DYNAMIC_DISPATCH(ToBf16Row)(dst, src, n);
}

}  // namespace internal
}  // namespace trainscope::kernels
#endif  // HWY_ONCE
