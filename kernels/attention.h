// Causal multi-head softmax attention; per (batch, head) GEMMs through BLAS,
// tiled over query rows so that no [T, T] matrix is held.
//
// Legend: N = rows (B*T tokens), B = batch, T = sequence length, C = model
// dims, NH = heads, NKV = key/value heads, hd = head dims, F = MLP dims,
// V = vocabulary.
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
// Grouped-query attention: NKV key/value heads (NKV divides NH), query head h
// reading kv head h / (NH / NKV); NKV = NH is plain multi-head attention.
// q: [B, T, NH, hd], k, v: [B, T, NKV, hd], all with row stride ld_qkv; out:
// [B, T, NH, hd] with row stride NH * hd. lse: [B, NH, T], each query row's
// log-sum-exp of its scores, saved for backward in place of the [T, T]
// probabilities (backward makes them again, a tile of query rows at a time;
// only keys up to a tile's last row are computed). Scale 1/sqrt(hd).
// workspace: attention_workspace_size(Tn, threads) elements.
template <typename T>
void attention_forward(T* out, T* lse, T* workspace, const T* q, const T* k, const T* v, int B,
                       int Tn, int NH, int NKV, int hd, int ld_qkv);
// dq, dk, dv (row stride ld_qkv) +=. Threads split the (batch, kv head)
// pairs, so the query heads sharing a kv head add into its dk, dv in order on
// one thread.
template <typename T>
void attention_backward(T* dq, T* dk, T* dv, T* workspace, const T* dout, const T* lse, const T* q,
                        const T* k, const T* v, int B, int Tn, int NH, int NKV, int hd, int ld_qkv);
std::size_t attention_workspace_size(int Tn, int threads);

}  // namespace trainscope::kernels

#endif  // TRAINSCOPE_KERNELS_ATTENTION_H_
