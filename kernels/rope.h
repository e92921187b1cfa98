// Rotary position embeddings, Hugging Face rotate-half convention, so
// checkpoints interchange with theirs.
//
// Legend: N = rows (B*T tokens), B = batch, T = sequence length, C = model
// dims, NH = heads, hd = head dims (C / NH), F = MLP dims, V = vocabulary.
// Row-major throughout. Kernels never allocate; every *_backward ACCUMULATES
// (+=) into the gradients it produces, so callers zero them first. Threads:
// OpenMP, static schedules, per-thread partials combined in thread order, so
// results are bit-identical for a given thread count. Instantiated for float
// (training) and double (finite-difference tests).
#ifndef TRAINSCOPE_KERNELS_ROPE_H_
#define TRAINSCOPE_KERNELS_ROPE_H_

#include <cstddef>
#include <cstdint>

namespace trainscope::kernels {

// ---- rotary position embedding (Hugging Face rotate-half convention) ------
// cos/sin tables [T_max, hd/2]: angle(t, i) = t * theta^(-2i/hd).
template <typename T>
void rope_tables(T* cos_table, T* sin_table, int T_max, int hd, float theta);
// Rotates x in place: x is [B, T, NH, hd] with row stride ld between tokens.
// For i < hd/2: (x_i, x_{i+hd/2}) <- (x_i cos - x_{i+hd/2} sin, x_{i+hd/2} cos + x_i sin).
template <typename T>
void rope_forward(T* x, const T* cos_table, const T* sin_table, int B, int Tn, int NH, int hd,
                  int ld);
// dx in place <- R^T dx (the rotation is orthogonal, so this is its backward).
template <typename T>
void rope_backward(T* dx, const T* cos_table, const T* sin_table, int B, int Tn, int NH, int hd,
                   int ld);

}  // namespace trainscope::kernels

#endif  // TRAINSCOPE_KERNELS_ROPE_H_
