// The element-wise float kernels' vector code, a range of rows (or of a flat
// array) per call, written on Google Highway and dispatched at run
// time to the level kernels/simd.h reports. The kernels in kernels/*.cpp
// split their rows over OpenMP threads and call these with each thread's
// share; each call finds its level's code by Highway's dispatch table.
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
// A tile of attention's scores P [R, kmax]: row i is query t = r0 + i over
// keys [0, t], the rest of the row set to 0. softmax_tile: softmax in
// place, lse[t] its log-sum-exp. exp_tile: exp(P - lse[t]), forward's
// probabilities made again. softmax_backward_tile: dS = P (dS - sum(dS P))
// scale.
void softmax_tile(float* P, float* lse, int r0, int R, int kmax);
void exp_tile(float* P, const float* lse, int r0, int R, int kmax);
void softmax_backward_tile(float* dS, const float* P, int r0, int R, int kmax, float scale);
// SwiGLU over `rows` rows of gu [rows, 2F] (gate | up), out / dout [rows, F].
void swiglu_forward_rows(float* out, const float* gu, int64_t rows, int F);
void swiglu_backward_rows(float* dgu, const float* dout, const float* gu, int64_t rows, int F);

// ---- streaming (simd_stream.cpp) ---------------------------------------------
// RMSNorm over `rows` rows of C: y = w x r, rstd[n] = r = (mean(x^2) +
// eps)^-1/2; add_rmsnorm_rows first adds `add` into x.
void rmsnorm_rows(float* y, float* rstd, const float* x, const float* w, int64_t rows, int C,
                  float eps);
void add_rmsnorm_rows(float* x, float* y, float* rstd, const float* add, const float* w,
                      int64_t rows, int C, float eps);
// dx += r w dy - (r^3 / C) x sum(w dy x), r = rstd[n], row by row; and
// when dw is not null, dw[c] += dy[c] x[c] r in the same pass, the rows in
// order (what rmsnorm_dweight adds, the same bits, for a caller that owns
// all C columns and every row: one thread).
void rmsnorm_backward_rows(float* dx, float* dw, const float* dy, const float* x, const float* w,
                           const float* rstd, int64_t rows, int C);
// dw[c] += sum over the rows of dy[c] x[c] rstd[n], c < n (columns of rows
// of stride C: a thread's share of the weight's columns).
void rmsnorm_dweight(float* dw, const float* dy, const float* x, const float* rstd, int64_t rows,
                     int C, int64_t n);
// Tokens [t0, t1) of x (row stride ld; token t at position t % Tn), NH heads
// of hd each, rotate-half by the position's cos/sin [Tn, hd/2]; sign -1
// applies the transpose (backward).
void rope_rows(float* x, const float* cos_table, const float* sin_table, int64_t t0, int64_t t1,
               int Tn, int NH, int hd, int ld, float sign);
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
