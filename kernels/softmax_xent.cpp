#include "kernels/softmax_xent.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "kernels/float16.h"
#include "kernels/parallel.h"

namespace trainscope::kernels {

namespace {

// Row n's gradient, k * exp(logit - max) - scale at the target, from the
// exponentials in `row`: in place, or rounded into `out` (bf16).
template <typename T>
void write_gradient(T* row, uint16_t* out, int V, int target, T k, T scale) {
  if (out == nullptr) {
#pragma omp simd
    for (int j = 0; j < V; ++j) row[j] *= k;
    row[target] -= scale;
    return;
  }
  const T at_target = row[target] * k - scale;
#pragma omp simd
  for (int j = 0; j < V; ++j) out[j] = float_to_bf16(static_cast<float>(row[j] * k));
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
      T mx = row[0];
#pragma omp simd reduction(max : mx)
      for (int j = 0; j < V; ++j) mx = row[j] > mx ? row[j] : mx;
      const T target_logit = row[target];
      T sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int j = 0; j < V; ++j) {
        row[j] = internal::fast_exp(row[j] - mx);
        sum += row[j];
      }
      loss += std::log(static_cast<double>(sum)) + static_cast<double>(mx - target_logit);
      ++count;
      if (grad)
        write_gradient(row, out, V, target, static_cast<T>(grad_scale) / sum,
                       static_cast<T>(grad_scale));
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
