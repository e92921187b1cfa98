#include <cstdint>
#include <type_traits>

#include "kernels/gemm.h"
#include "kernels/gemm_backend.h"
#include "kernels/matmul.h"

namespace trainscope::kernels {

// Float GEMMs run on the library --gemm chose for their shape
// (kernels/gemm_backend.h); double ones (tests) on OpenBLAS.
template <typename T>
void matmul_forward(T* out, const T* inp, const T* weight, int N, int C, int OC) {
  if constexpr (std::is_same_v<T, float>) {
    const GemmKey k{N, OC, C, false, true, false};
    return gemm_f32(backend_for(k), k, out, inp, weight);
  }
  internal::gemm(false, true, N, OC, C, T(1), inp, C, weight, C, T(0), out, OC);
}

template <typename T>
void matmul_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, int N,
                     int C, int OC) {
  if (dinp != nullptr) {
    if constexpr (std::is_same_v<T, float>) {
      const GemmKey k{N, C, OC, false, false, true};
      gemm_f32(backend_for(k), k, dinp, dout, weight);
    } else {
      internal::gemm(false, false, N, C, OC, T(1), dout, OC, weight, C, T(1), dinp, C);
    }
  }
  if (dweight != nullptr) {
    if constexpr (std::is_same_v<T, float>) {
      const GemmKey k{OC, C, N, true, false, true};
      gemm_f32(backend_for(k), k, dweight, dout, inp);
    } else {
      internal::gemm(true, false, OC, C, N, T(1), dout, OC, inp, C, T(1), dweight, C);
    }
  }
}

template <typename T>
void matvec_forward(T* out, const T* inp, const T* weight, int C, int OC) {
#pragma omp parallel for schedule(static)
  for (int o = 0; o < OC; ++o) {
    const T* w = weight + static_cast<int64_t>(o) * C;
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int c = 0; c < C; ++c) sum += w[c] * inp[c];
    out[o] = sum;
  }
}

template void matvec_forward<float>(float*, const float*, const float*, int, int);
template void matvec_forward<double>(double*, const double*, const double*, int, int);
template void matmul_forward<float>(float*, const float*, const float*, int, int, int);
template void matmul_forward<double>(double*, const double*, const double*, int, int, int);
template void matmul_backward<float>(float*, float*, const float*, const float*, const float*, int,
                                     int, int);
template void matmul_backward<double>(double*, double*, const double*, const double*, const double*,
                                      int, int, int);

}  // namespace trainscope::kernels
