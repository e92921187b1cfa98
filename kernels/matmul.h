// Linear layers without bias, through cblas_sgemm / cblas_dgemm, and the
// naive reference they are tested against.
//
// Legend: N = rows (B*T tokens), B = batch, T = sequence length, C = model
// dims, NH = heads, hd = head dims (C / NH), F = MLP dims, V = vocabulary.
// Row-major throughout. Kernels never allocate; every *_backward ACCUMULATES
// (+=) into the gradients it produces, so callers zero them first. Threads:
// OpenMP, static schedules, per-thread partials combined in thread order, so
// results are bit-identical for a given thread count. Instantiated for float
// (training) and double (finite-difference tests).
#ifndef TRAINSCOPE_KERNELS_MATMUL_H_
#define TRAINSCOPE_KERNELS_MATMUL_H_

#include <cstddef>
#include <cstdint>

namespace trainscope::kernels {

// ---- matmul (no bias, as in Llama) -------------------------------------
// out[N, OC] = inp[N, C] @ weight[OC, C]^T
template <typename T>
void matmul_forward(T* out, const T* inp, const T* weight, int N, int C, int OC);
// dinp[N, C] += dout[N, OC] @ weight[OC, C];  dweight[OC, C] += dout^T @ inp.
// Either of dinp / dweight may be null to skip it.
template <typename T>
void matmul_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, int N,
                     int C, int OC);
// out[OC] = weight[OC, C] @ inp[C]: one token's matmul_forward (decoding).
// Memory-bound: every weight is read once, so rows are split over the OpenMP
// threads and each is one vectorised dot product. (OpenBLAS's sgemm with one
// row runs at a quarter of the memory's speed.) Deterministic: each output is
// one thread's sum in a fixed order.
template <typename T>
void matvec_forward(T* out, const T* inp, const T* weight, int C, int OC);
// Naive triple loops: the reference the BLAS path is tested against.
template <typename T>
void matmul_forward_reference(T* out, const T* inp, const T* weight, int N, int C, int OC);
template <typename T>
void matmul_backward_reference(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight,
                               int N, int C, int OC);

}  // namespace trainscope::kernels

#endif  // TRAINSCOPE_KERNELS_MATMUL_H_
