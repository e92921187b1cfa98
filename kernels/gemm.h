// gemm<T>: row-major C = alpha * op(A) @ op(B) + beta * C through OpenBLAS
// (sgemm for float, dgemm for double). Internal to kernels/.
#ifndef TRAINSCOPE_KERNELS_GEMM_H_
#define TRAINSCOPE_KERNELS_GEMM_H_

#include <cblas.h>

namespace trainscope::kernels::internal {

inline void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                 int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
inline void gemm(bool trans_a, bool trans_b, int M, int N, int K, double alpha, const double* A,
                 int lda, const double* B, int ldb, double beta, double* C, int ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace trainscope::kernels::internal

#endif  // TRAINSCOPE_KERNELS_GEMM_H_
