#include "kernels/adamw.h"

#include <cmath>

#include "kernels/parallel.h"
#include "kernels/simd_kernels.h"

namespace trainscope::kernels {

// PyTorch's AdamW order: decay the weights, then the Adam step with
// bias-corrected moments. The clip scale rides in the same loop: the update
// is memory-bound (28 bytes an element), and a separate scaling pass would
// add 8 more.
void adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                  const AdamWParams& hp, int64_t t, float grad_scale) {
  const float bc1 = 1.0f - static_cast<float>(std::pow(hp.beta1, static_cast<double>(t)));
  const float bc2 = 1.0f - static_cast<float>(std::pow(hp.beta2, static_cast<double>(t)));
  const float step = hp.lr / bc1;
  const float inv_sqrt_bc2 = 1.0f / std::sqrt(bc2);
  const float decay = 1.0f - hp.lr * hp.weight_decay;
  const float b1 = hp.beta1, b2 = hp.beta2, eps = hp.eps;
  if (internal::simd_enabled()) {
    const internal::AdamwStep s{grad_scale, b1, b2, step, inv_sqrt_bc2, decay, eps};
    return internal::parallel_ranges(static_cast<int64_t>(n), [&](int64_t i0, int64_t i1) {
      internal::adamw(params + i0, grads + i0, m + i0, v + i0, i1 - i0, s);
    });
  }
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    const float g = grads[i] * grad_scale;
    const float mi = b1 * m[i] + (1.0f - b1) * g;
    const float vi = b2 * v[i] + (1.0f - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    params[i] = params[i] * decay - step * mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps);
  }
}

// The sum is split into a fixed number of parts by index, whatever the
// thread count, and the parts are added in order; the vector code sums a part
// in the same lanes on every level with FMA (kernels/simd_math-inl.h): ranks
// whose hosts give them different thread counts, or AVX2 and AVX-512 CPUs,
// compute the same norm, hence clip alike and stay identical replicas.
double global_norm(const float* grads, std::size_t n) {
  constexpr int kParts = 64;
  double part_sums[kParts] = {};
  const bool simd = internal::simd_enabled();
#pragma omp parallel for schedule(static) num_threads(internal::num_threads())
  for (int p = 0; p < kParts; ++p) {
    int64_t i0, i1;
    internal::chunk_range(static_cast<int64_t>(n), kParts, p, &i0, &i1);
    // Float lanes summed into double per block of 1024: vector speed, double accuracy.
    if (simd) {
      part_sums[p] = internal::sum_squares(grads + i0, i1 - i0);
      continue;
    }
    double acc = 0;
    for (int64_t b = i0; b < i1; b += 1024) {
      const int64_t e = b + 1024 < i1 ? b + 1024 : i1;
      float s = 0;
#pragma omp simd reduction(+ : s)
      for (int64_t i = b; i < e; ++i) s += grads[i] * grads[i];
      acc += s;
    }
    part_sums[p] = acc;
  }
  double total = 0;
  for (double s : part_sums) total += s;
  return std::sqrt(total);
}

}  // namespace trainscope::kernels
