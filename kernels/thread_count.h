// The threads the kernels compute on: OpenMP's (our kernels and oneDNN) and
// OpenBLAS's, which are two settings and must agree.
//
// Thread-safety: process-wide settings; call from the compute thread, outside
// a parallel region.
#ifndef TRAINSCOPE_KERNELS_THREAD_COUNT_H_
#define TRAINSCOPE_KERNELS_THREAD_COUNT_H_

#include <cblas.h>
#include <omp.h>

namespace trainscope::kernels {

inline void set_compute_threads(int threads) {
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

// Sets both for a scope (a probe or a timing at another thread count) and
// restores what they were.
class ScopedComputeThreads {
 public:
  explicit ScopedComputeThreads(int threads)
      : omp_(omp_get_max_threads()), blas_(openblas_get_num_threads()) {
    set_compute_threads(threads);
  }
  // OpenBLAS's OpenMP build sets OpenMP's count too: it goes first, so
  // that OpenMP's is the one it was even where the two differed.
  ~ScopedComputeThreads() {
    openblas_set_num_threads(blas_);
    omp_set_num_threads(omp_);
  }
  ScopedComputeThreads(const ScopedComputeThreads&) = delete;
  ScopedComputeThreads& operator=(const ScopedComputeThreads&) = delete;

 private:
  int omp_, blas_;
};

}  // namespace trainscope::kernels

#endif  // TRAINSCOPE_KERNELS_THREAD_COUNT_H_
