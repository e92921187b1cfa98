// The SiLU-gated MLP nonlinearity of Llama: down(silu(gate(x)) * up(x)).
//
// Legend: N = rows (B*T tokens), B = batch, T = sequence length, C = model
// dims, NH = heads, hd = head dims (C / NH), F = MLP dims, V = vocabulary.
// Row-major throughout. Kernels never allocate; every *_backward ACCUMULATES
// (+=) into the gradients it produces, so callers zero them first. Threads:
// OpenMP, static schedules, per-thread partials combined in thread order, so
// results are bit-identical for a given thread count. Instantiated for float
// (training) and double (finite-difference tests).
#ifndef TRAINSCOPE_KERNELS_SWIGLU_H_
#define TRAINSCOPE_KERNELS_SWIGLU_H_

#include <cstddef>
#include <cstdint>

namespace trainscope::kernels {

// ---- SwiGLU: out = silu(gate) * up -----------------------------------------
// gu: [N, 2F], each row [gate (F) | up (F)] (the fused gate/up projection);
// out: [N, F].
template <typename T>
void swiglu_forward(T* out, const T* gu, int N, int F);
// dgu[N, 2F] += (d gate | d up)
template <typename T>
void swiglu_backward(T* dgu, const T* dout, const T* gu, int N, int F);

}  // namespace trainscope::kernels

#endif  // TRAINSCOPE_KERNELS_SWIGLU_H_
