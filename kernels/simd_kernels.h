// The element-wise float kernels' vector code, one row (or one range of a
// flat array) per call, written on Google Highway and dispatched at run
// time to the level kernels/simd.h reports. The kernels in kernels/*.cpp
// split their rows over OpenMP threads and call these; each call finds its
// level's code by Highway's dispatch table (one atomic load).
//
// Shapes as in the kernels' own headers; n and lengths in elements. Row
// functions leave elements past their length alone unless they say so.
// Results: the same bits on every level with FMA (kernels/simd_math-inl.h
// says why), within an ulp or so of the reference templates.
#ifndef TRAINSCOPE_KERNELS_SIMD_KERNELS_H_
#define TRAINSCOPE_KERNELS_SIMD_KERNELS_H_

#include <cstddef>
#include <cstdint>

namespace trainscope::kernels::internal {

// False while ScopedSimdLevel(kReferenceLevel) holds: the float kernels then
// run their reference templates. The first call applies
// TRAINSCOPE_MAX_CPU_ISA's cap to the dispatch.
bool simd_enabled();

// ---- exp-based (simd_exp.cpp) ------------------------------------------------
// Softmax-cross-entropy's row: max -> *max, row[j] = exp(row[j] - max) in
// place; returns their sum.
float xent_exp_row(float* row, int64_t n, float* max);
// row[j] *= k; out[j] = bf16(row[j] * k) (row unchanged).
void scale_row(float* row, int64_t n, float k);
void scale_row_to_bf16(uint16_t* out, const float* row, int64_t n, float k);
// Attention's tile rows: keys [0, len) of a row of kmax scores, the rest
// set to 0. softmax_row: softmax in place, returns the log-sum-exp.
// exp_row: exp(row - lse), forward's probabilities made again.
// softmax_backward_row: ds = p (ds - sum(ds p)) scale.
float softmax_row(float* row, int len, int kmax);
void exp_row(float* row, int len, int kmax, float lse);
void softmax_backward_row(float* ds, const float* p, int len, int kmax, float scale);
// SwiGLU over `rows` rows of gu [rows, 2F] (gate | up), out / dout [rows, F].
void swiglu_forward_rows(float* out, const float* gu, int64_t rows, int F);
void swiglu_backward_rows(float* dgu, const float* dout, const float* gu, int64_t rows, int F);

// ---- streaming (simd_stream.cpp) ---------------------------------------------
// y = w * x * r for r = (mean(x^2) + eps)^-1/2, returned; add_rmsnorm_row
// first adds `add` into x.
float rmsnorm_row(float* y, const float* x, const float* w, int C, float eps);
float add_rmsnorm_row(float* x, float* y, const float* add, const float* w, int C, float eps);
// dx += r w dy - (r^3 / C) x sum(w dy x); dw[c] += dy[c] x[c] r over n columns.
void rmsnorm_backward_row(float* dx, const float* dy, const float* x, const float* w, float r,
                          int C);
void rmsnorm_dweight(float* dw, const float* dy, const float* x, float r, int64_t n);
// One token's NH heads of hd in `row`, rotate-half by the token's cos/sin
// [hd/2]; sign -1 applies the transpose (backward).
void rope_row(float* row, const float* cos_t, const float* sin_t, int NH, int hd, float sign);
// AdamW over n elements (kernels/adamw.cpp derives the constants).
struct AdamwStep {
  float grad_scale, beta1, beta2, step, inv_sqrt_bc2, decay, eps;
};
void adamw(float* p, const float* g, float* m, float* v, int64_t n, const AdamwStep& s);
// sum g^2 in blocks of 1024: each block summed in float, the blocks in double.
double sum_squares(const float* g, int64_t n);
void to_bf16(uint16_t* dst, const float* src, int64_t n);

}  // namespace trainscope::kernels::internal

#endif  // TRAINSCOPE_KERNELS_SIMD_KERNELS_H_
