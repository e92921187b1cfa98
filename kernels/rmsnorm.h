// RMSNorm as in Hugging Face LlamaRMSNorm (no mean subtraction, no bias).
//
// Legend: N = rows (B*T tokens), B = batch, T = sequence length, C = model
// dims, NH = heads, hd = head dims (C / NH), F = MLP dims, V = vocabulary.
// Row-major throughout. Kernels never allocate; every *_backward ACCUMULATES
// (+=) into the gradients it produces, so callers zero them first. Threads:
// OpenMP, static schedules, per-thread partials combined in thread order, so
// results are bit-identical for a given thread count. Instantiated for float
// (training) and double (finite-difference tests).
#ifndef TRAINSCOPE_KERNELS_RMSNORM_H_
#define TRAINSCOPE_KERNELS_RMSNORM_H_

#include <cstddef>
#include <cstdint>

namespace trainscope::kernels {

// ---- RMSNorm (Hugging Face LlamaRMSNorm) ----------------------------------
// rstd[n] = 1 / sqrt(mean(inp[n]^2) + eps);  out[n, c] = weight[c] * inp[n, c] * rstd[n]
template <typename T>
void rmsnorm_forward(T* out, T* rstd, const T* inp, const T* weight, int N, int C, float eps);
// The residual add fused into the norm that follows it (a Llama block's
// res_mid = x + attn and the next block's x = res_mid + mlp): one pass over
// the rows instead of an add and a norm, each row's sum still in L1 when it
// is normalised. x[n] += residual[n], then out, rstd = rmsnorm(x) as above;
// bit-identical to add_forward followed by rmsnorm_forward.
template <typename T>
void add_rmsnorm_forward(T* x, T* out, T* rstd, const T* residual, const T* weight, int N, int C,
                         float eps);
// dinp[N, C] +=, dweight[C] += (dweight may be null: a frozen weight);
// uses the rstd saved by forward.
template <typename T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight,
                      const T* rstd, int N, int C);

}  // namespace trainscope::kernels

#endif  // TRAINSCOPE_KERNELS_RMSNORM_H_
