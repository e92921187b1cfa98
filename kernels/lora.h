// LoRA (low-rank adaptation, Hu et al. 2021) around a frozen linear layer,
// and the inverted dropout applied to its input.
//
// A frozen weight W [OC, C] gains y += scale * (x A^T) B^T with A [r, C] and
// B [OC, r]: the adapter's output is added into the base layer's output,
// which may be a column block of a wider fused output (q of [N, Q + 2KV]),
// hence the row stride `ldo`. Same conventions as kernels/matmul.h:
// row-major, backward ACCUMULATES into dinp, dA and dB.
#ifndef TRAINSCOPE_KERNELS_LORA_H_
#define TRAINSCOPE_KERNELS_LORA_H_

#include <cstdint>

namespace trainscope::kernels {

// u[N, r] = inp[N, C] @ A[r, C]^T (kept for backward);
// out[N, OC] (row stride ldo) += scale * u @ B[OC, r]^T.
template <typename T>
void lora_forward(T* out, int ldo, T* u, const T* inp, const T* A, const T* B, int N, int C, int OC,
                  int r, T scale);
// dout[N, OC] (row stride ldo) is d(out). du[N, r] is scratch.
// dB += scale * dout^T @ u;  du = scale * dout @ B;  dA += du^T @ inp;
// dinp[N, C] += du @ A (dinp may be null: the first layer's input needs none).
template <typename T>
void lora_backward(T* dinp, T* dA, T* dB, T* du, const T* dout, int ldo, const T* inp, const T* u,
                   const T* A, const T* B, int N, int C, int OC, int r, T scale);

// Merges an adapter into its weight: W[OC, C] += scale * B[OC, r] @ A[r, C].
template <typename T>
void lora_merge(T* W, const T* A, const T* B, int C, int OC, int r, T scale);

// Inverted dropout: out[i] = keep(i) ? inp[i] / (1 - p) : 0, where keep(i)
// is a hash of (seed, i), so backward regenerates the mask instead of
// storing it. 0 <= p < 1.
template <typename T>
void dropout_forward(T* out, const T* inp, int64_t n, float p, uint64_t seed);
// dinp[i] += keep(i) ? dout[i] / (1 - p) : 0, the same mask as forward.
template <typename T>
void dropout_backward(T* dinp, const T* dout, int64_t n, float p, uint64_t seed);

}  // namespace trainscope::kernels

#endif  // TRAINSCOPE_KERNELS_LORA_H_
