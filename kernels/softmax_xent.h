// Fused softmax + cross-entropy over the vocabulary, writing the logits
// gradient in place (llm.c's fused classifier).
//
// Legend: N = rows (B*T tokens), B = batch, T = sequence length, C = model
// dims, NH = heads, hd = head dims (C / NH), F = MLP dims, V = vocabulary.
// Row-major throughout. Kernels never allocate; every *_backward ACCUMULATES
// (+=) into the gradients it produces, so callers zero them first. Threads:
// OpenMP, static schedules, per-thread partials combined in thread order, so
// results are bit-identical for a given thread count. Instantiated for float
// (training) and double (finite-difference tests).
#ifndef TRAINSCOPE_KERNELS_SOFTMAX_XENT_H_
#define TRAINSCOPE_KERNELS_SOFTMAX_XENT_H_

#include <cstddef>
#include <cstdint>

namespace trainscope::kernels {

// ---- fused softmax + cross-entropy ----------------------------------------
// logits: [N, V]; targets[n] in [0, V) or -1 (not predicted, e.g. padding).
// Returns the SUM of -log softmax(logits[n])[targets[n]] over predicted rows
// and stores how many rows were predicted in *predicted. When grad_scale is
// non-zero, overwrites each predicted row of logits with
// grad_scale * (softmax - onehot) and each unpredicted row with zeros: the
// gradient of grad_scale * sum(loss). (grad_scale = 1 / predicted rows of the
// global batch gives the mean.) Rows with a target outside [0, V) other than
// -1 are an internal error (callers validate tokens).
// With grad_bf16 (--precision bf16's LM head), the gradient goes there
// instead, [N, V] rounded to bf16 as the head's backward GEMMs take it (the
// same bits as rounding the fp32 gradient after), and logits are left
// holding scratch: one pass over the 4-byte gradient fewer each way.
template <typename T>
double softmax_xent_forward(T* logits, const int32_t* targets, int N, int V, double grad_scale,
                            int64_t* predicted, uint16_t* grad_bf16 = nullptr);

}  // namespace trainscope::kernels

#endif  // TRAINSCOPE_KERNELS_SOFTMAX_XENT_H_
