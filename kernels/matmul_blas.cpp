#include <cstdint>

#include "kernels/gemm.h"
#include "kernels/matmul.h"

namespace trainscope::kernels {

template <typename T>
void matmul_forward(T* out, const T* inp, const T* weight, int N, int C, int OC) {
  internal::gemm(false, true, N, OC, C, T(1), inp, C, weight, C, T(0), out, OC);
}

template <typename T>
void matmul_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, int N,
                     int C, int OC) {
  if (dinp != nullptr) {
    internal::gemm(false, false, N, C, OC, T(1), dout, OC, weight, C, T(1), dinp, C);
  }
  if (dweight != nullptr) {
    internal::gemm(true, false, OC, C, N, T(1), dout, OC, inp, C, T(1), dweight, C);
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
