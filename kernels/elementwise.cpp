#include "kernels/elementwise.h"

namespace trainscope::kernels {

template <typename T>
void add_forward(T* out, const T* a, const T* b, std::size_t n) {
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template void add_forward<float>(float*, const float*, const float*, std::size_t);
template void add_forward<double>(double*, const double*, const double*, std::size_t);

}  // namespace trainscope::kernels
