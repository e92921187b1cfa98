#include "kernels/softmax_xent.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "base/check.h"
#include "kernels/float16.h"
#include "kernels/parallel.h"
#include "kernels/simd_kernels.h"

namespace trainscope::kernels {

namespace {

// Row n's max -> *mx, its exponentials exp(logit - max) in place; returns
// their sum. float runs the dispatched vector code unless the reference is
// asked for (kernels/simd.h).
template <typename T>
T exp_and_sum(T* row, int V, T* mx, bool simd) {
  if constexpr (std::is_same_v<T, float>) {
    if (simd) return internal::xent_exp_row(row, V, mx);
  }
  T m = row[0];
#pragma omp simd reduction(max : m)
  for (int j = 0; j < V; ++j) m = row[j] > m ? row[j] : m;
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int j = 0; j < V; ++j) {
    row[j] = internal::fast_exp(row[j] - m);
    sum += row[j];
  }
  *mx = m;
  return sum;
}

// Row n's gradient, k * exp(logit - max) - scale at the target, from the
// exponentials in `row`: in place, or rounded into `out` (bf16).
template <typename T>
void write_gradient(T* row, uint16_t* out, int V, int target, T k, T scale, bool simd) {
  const bool vector = std::is_same_v<T, float> && simd;
  if (out == nullptr) {
    if constexpr (std::is_same_v<T, float>) {
      if (vector) internal::scale_row(row, V, k);
    }
    if (!vector) {
#pragma omp simd
      for (int j = 0; j < V; ++j) row[j] *= k;
    }
    row[target] -= scale;
    return;
  }
  const T at_target = row[target] * k - scale;
  if constexpr (std::is_same_v<T, float>) {
    if (vector) internal::scale_row_to_bf16(out, row, V, k);
  }
  if (!vector) {
#pragma omp simd
    for (int j = 0; j < V; ++j) out[j] = float_to_bf16(static_cast<float>(row[j] * k));
  }
  out[target] = float_to_bf16(static_cast<float>(at_target));
}

}  // namespace

template <typename T>
double softmax_xent_forward(T* logits, const int32_t* targets, int N, int V, double grad_scale,
                            int64_t* predicted, uint16_t* grad_bf16) {
  double loss_partial[internal::kMaxThreads] = {};
  int64_t count_partial[internal::kMaxThreads] = {};
  const int threads = internal::num_threads();
  const bool grad = grad_scale != 0.0;
  const bool simd = internal::simd_enabled();
#pragma omp parallel num_threads(threads)
  {
    const int tid = omp_get_thread_num();
    int64_t r0, r1;
    internal::chunk_range(N, omp_get_num_threads(), tid, &r0, &r1);
    double loss = 0;
    int64_t count = 0;
    for (int64_t n = r0; n < r1; ++n) {
      T* row = logits + n * V;
      uint16_t* out = grad_bf16 != nullptr ? grad_bf16 + n * V : nullptr;
      const int32_t target = targets[n];
      if (target < 0) {
        if (grad && out != nullptr) std::fill(out, out + V, uint16_t{0});
        if (grad && out == nullptr) std::fill(row, row + V, T(0));
        continue;
      }
      TS_CHECK(target < V) << "target " << target << " outside vocabulary of " << V;
      const T target_logit = row[target];
      T mx;
      const T sum = exp_and_sum(row, V, &mx, simd);
      loss += std::log(static_cast<double>(sum)) + static_cast<double>(mx - target_logit);
      ++count;
      if (grad)
        write_gradient(row, out, V, target, static_cast<T>(grad_scale) / sum,
                       static_cast<T>(grad_scale), simd);
    }
    loss_partial[tid] = loss;
    count_partial[tid] = count;
  }
  double loss = 0;
  int64_t count = 0;
  for (int t = 0; t < threads; ++t) {
    loss += loss_partial[t];
    count += count_partial[t];
  }
  *predicted = count;
  return loss;
}

template double softmax_xent_forward<float>(float*, const int32_t*, int, int, double, int64_t*,
                                            uint16_t*);
template double softmax_xent_forward<double>(double*, const int32_t*, int, int, double, int64_t*,
                                             uint16_t*);

}  // namespace trainscope::kernels
