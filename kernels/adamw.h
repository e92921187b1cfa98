// AdamW and global-norm gradient clipping over flat float arrays.
//
// Legend: N = rows (B*T tokens), B = batch, T = sequence length, C = model
// dims, NH = heads, hd = head dims (C / NH), F = MLP dims, V = vocabulary.
// Row-major throughout. Kernels never allocate; every *_backward ACCUMULATES
// (+=) into the gradients it produces, so callers zero them first. Threads:
// OpenMP, static schedules, per-thread partials combined in thread order, so
// results are bit-identical for a given thread count. Instantiated for float
// (training) and double (finite-difference tests).
#ifndef TRAINSCOPE_KERNELS_ADAMW_H_
#define TRAINSCOPE_KERNELS_ADAMW_H_

#include <cstddef>
#include <cstdint>

namespace trainscope::kernels {

// ---- optimizer (float only) -------------------------------------------------
struct AdamWParams {
  float lr = 3e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;
};
// AdamW with decoupled weight decay and bias correction; t is the 1-based step.
// params, grads, m, v: [n]. Each step uses g = grads * grad_scale (rounded to
// float, as scaling the gradients first would), so clipping by the global
// norm costs no pass of its own; grads are left as they are.
// p -= lr * (mhat / (sqrt(vhat) + eps) + weight_decay * p)
void adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                  const AdamWParams& hp, int64_t t, float grad_scale = 1.0f);
// sqrt(sum g^2), accumulated in double; deterministic for a thread count.
double global_norm(const float* grads, std::size_t n);

}  // namespace trainscope::kernels

#endif  // TRAINSCOPE_KERNELS_ADAMW_H_
