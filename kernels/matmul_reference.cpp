#include "kernels/matmul.h"

namespace trainscope::kernels {

template <typename T>
void matmul_forward_reference(T* out, const T* inp, const T* weight, int N, int C, int OC) {
  for (int n = 0; n < N; ++n) {
    for (int o = 0; o < OC; ++o) {
      T sum = 0;
      for (int c = 0; c < C; ++c) sum += inp[n * C + c] * weight[o * C + c];
      out[n * OC + o] = sum;
    }
  }
}

template <typename T>
void matmul_backward_reference(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight,
                               int N, int C, int OC) {
  for (int n = 0; n < N; ++n) {
    for (int o = 0; o < OC; ++o) {
      const T d = dout[n * OC + o];
      for (int c = 0; c < C; ++c) {
        if (dinp != nullptr) dinp[n * C + c] += d * weight[o * C + c];
        if (dweight != nullptr) dweight[o * C + c] += d * inp[n * C + c];
      }
    }
  }
}

template void matmul_forward_reference<float>(float*, const float*, const float*, int, int, int);
template void matmul_forward_reference<double>(double*, const double*, const double*, int, int,
                                               int);
template void matmul_backward_reference<float>(float*, float*, const float*, const float*,
                                               const float*, int, int, int);
template void matmul_backward_reference<double>(double*, double*, const double*, const double*,
                                                const double*, int, int, int);

}  // namespace trainscope::kernels
