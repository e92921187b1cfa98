#include "kernels/embedding.h"

#include <cstring>

#include "kernels/parallel.h"

namespace trainscope::kernels {

template <typename T>
void embedding_forward(T* out, const int32_t* tokens, const T* wte, int N, int C) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    std::memcpy(out + static_cast<int64_t>(n) * C, wte + static_cast<int64_t>(tokens[n]) * C,
                sizeof(T) * C);
  }
}

template <typename T>
void embedding_backward(T* dwte, const T* dout, const int32_t* tokens, int N, int C) {
  // Split by columns, not rows: repeated tokens then never race, and each
  // column sums its rows in row order whatever the thread count.
#pragma omp parallel
  {
    int64_t c0, c1;
    internal::chunk_range(C, omp_get_num_threads(), omp_get_thread_num(), &c0, &c1);
    for (int n = 0; n < N; ++n) {
      T* dst = dwte + static_cast<int64_t>(tokens[n]) * C;
      const T* src = dout + static_cast<int64_t>(n) * C;
      for (int64_t c = c0; c < c1; ++c) dst[c] += src[c];
    }
  }
}

template void embedding_forward<float>(float*, const int32_t*, const float*, int, int);
template void embedding_forward<double>(double*, const int32_t*, const double*, int, int);
template void embedding_backward<float>(float*, const float*, const int32_t*, int, int);
template void embedding_backward<double>(double*, const double*, const int32_t*, int, int);

}  // namespace trainscope::kernels
