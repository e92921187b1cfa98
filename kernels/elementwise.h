// Small elementwise helpers.
//
// Legend: N = rows (B*T tokens), B = batch, T = sequence length, C = model
// dims, NH = heads, hd = head dims (C / NH), F = MLP dims, V = vocabulary.
// Row-major throughout. Kernels never allocate; every *_backward ACCUMULATES
// (+=) into the gradients it produces, so callers zero them first. Threads:
// OpenMP, static schedules, per-thread partials combined in thread order, so
// results are bit-identical for a given thread count. Instantiated for float
// (training) and double (finite-difference tests).
#ifndef TRAINSCOPE_KERNELS_ELEMENTWISE_H_
#define TRAINSCOPE_KERNELS_ELEMENTWISE_H_

#include <cstddef>
#include <cstdint>

namespace trainscope::kernels {

// ---- elementwise ------------------------------------------------------------
// out[n] = a[n] + b[n]. The model adds its residuals inside the next norm
// (rmsnorm.h add_rmsnorm_forward); this is the separate add that fusion is
// measured and tested against (kernels_bench, kernels_test).
template <typename T>
void add_forward(T* out, const T* a, const T* b, std::size_t n);

}  // namespace trainscope::kernels

#endif  // TRAINSCOPE_KERNELS_ELEMENTWISE_H_
