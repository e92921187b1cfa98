// Token embedding lookup.
//
// Legend: N = rows (B*T tokens), B = batch, T = sequence length, C = model
// dims, NH = heads, hd = head dims (C / NH), F = MLP dims, V = vocabulary.
// Row-major throughout. Kernels never allocate; every *_backward ACCUMULATES
// (+=) into the gradients it produces, so callers zero them first. Threads:
// OpenMP, static schedules, per-thread partials combined in thread order, so
// results are bit-identical for a given thread count. Instantiated for float
// (training) and double (finite-difference tests).
#ifndef TRAINSCOPE_KERNELS_EMBEDDING_H_
#define TRAINSCOPE_KERNELS_EMBEDDING_H_

#include <cstddef>
#include <cstdint>

namespace trainscope::kernels {

// ---- token embedding ----------------------------------------------------
// out[N, C] = wte[tokens[n], :]
template <typename T>
void embedding_forward(T* out, const int32_t* tokens, const T* wte, int N, int C);
// dwte[tokens[n], :] += dout[n, :]
template <typename T>
void embedding_backward(T* dwte, const T* dout, const int32_t* tokens, int N, int C);

}  // namespace trainscope::kernels

#endif  // TRAINSCOPE_KERNELS_EMBEDDING_H_
