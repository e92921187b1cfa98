// Causal multi-head softmax attention; per (batch, head) GEMMs through BLAS.
//
// Legend: N = rows (B*T tokens), B = batch, T = sequence length, C = model
// dims, NH = heads, hd = head dims (C / NH), F = MLP dims, V = vocabulary.
// Row-major throughout. Kernels never allocate; every *_backward ACCUMULATES
// (+=) into the gradients it produces, so callers zero them first. Threads:
// OpenMP, static schedules, per-thread partials combined in thread order, so
// results are bit-identical for a given thread count. Instantiated for float
// (training) and double (finite-difference tests).
#ifndef TRAINSCOPE_KERNELS_ATTENTION_H_
#define TRAINSCOPE_KERNELS_ATTENTION_H_

#include <cstddef>
#include <cstdint>

namespace trainscope::kernels {

// ---- causal softmax attention --------------------------------------------
// q, k, v: [B, T, NH, hd] with row stride ld_qkv; out: [B, T, NH, hd] with row
// stride C = NH * hd. att: [B, NH, T, T] softmax probabilities, saved for
// backward (upper triangle is zero). Scale 1/sqrt(hd).
template <typename T>
void attention_forward(T* out, T* att, const T* q, const T* k, const T* v, int B, int Tn, int NH,
                       int hd, int ld_qkv);
// dq, dk, dv (row stride ld_qkv) +=. workspace: at least
// attention_workspace_size(Tn, threads) elements.
template <typename T>
void attention_backward(T* dq, T* dk, T* dv, T* workspace, const T* dout, const T* att,
                        const T* q, const T* k, const T* v, int B, int Tn, int NH, int hd,
                        int ld_qkv);
std::size_t attention_workspace_size(int Tn, int threads);

}  // namespace trainscope::kernels

#endif  // TRAINSCOPE_KERNELS_ATTENTION_H_
