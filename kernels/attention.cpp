#include "kernels/attention.h"

#include <omp.h>

#include <cmath>
#include <cstring>

#include "kernels/gemm.h"
#include "kernels/parallel.h"

namespace trainscope::kernels {

std::size_t attention_workspace_size(int Tn, int threads) {
  return static_cast<std::size_t>(threads) * Tn * Tn;
}

// Per (batch, head): S = q k^T / sqrt(hd) by one GEMM, causal softmax row by
// row, out = P v by a second GEMM. The (b, h) pairs run on separate threads;
// OpenBLAS runs single-threaded inside an OpenMP parallel region.
template <typename T>
void attention_forward(T* out, T* att, const T* q, const T* k, const T* v, int B, int Tn, int NH,
                       int NKV, int hd, int ld_qkv) {
  const int C = NH * hd, group = NH / NKV;
  const T scale = T(1) / std::sqrt(static_cast<T>(hd));
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < B * NH; ++bh) {
    const int b = bh / NH, h = bh % NH;
    const int64_t row0 = static_cast<int64_t>(b) * Tn;
    const T* qb = q + row0 * ld_qkv + h * hd;
    const T* kb = k + row0 * ld_qkv + (h / group) * hd;
    const T* vb = v + row0 * ld_qkv + (h / group) * hd;
    T* P = att + static_cast<int64_t>(bh) * Tn * Tn;
    internal::gemm(false, true, Tn, Tn, hd, scale, qb, ld_qkv, kb, ld_qkv, T(0), P, Tn);
    for (int t = 0; t < Tn; ++t) {
      T* row = P + static_cast<int64_t>(t) * Tn;
      T mx = row[0];
      for (int j = 1; j <= t; ++j) mx = row[j] > mx ? row[j] : mx;
      T sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int j = 0; j <= t; ++j) {
        row[j] = internal::fast_exp(row[j] - mx);
        sum += row[j];
      }
      const T inv = T(1) / sum;
#pragma omp simd
      for (int j = 0; j <= t; ++j) row[j] *= inv;
      for (int j = t + 1; j < Tn; ++j) row[j] = 0;
    }
    internal::gemm(false, false, Tn, hd, Tn, T(1), P, Tn, vb, ld_qkv, T(0), out + row0 * C + h * hd,
                   C);
  }
}

template <typename T>
void attention_backward(T* dq, T* dk, T* dv, T* workspace, const T* dout, const T* att, const T* q,
                        const T* k, const T* v, int B, int Tn, int NH, int NKV, int hd,
                        int ld_qkv) {
  const int C = NH * hd, group = NH / NKV;
  const T scale = T(1) / std::sqrt(static_cast<T>(hd));
#pragma omp parallel for schedule(static)
  for (int bk = 0; bk < B * NKV; ++bk) {
    const int b = bk / NKV, kh = bk % NKV;
    const int64_t row0 = static_cast<int64_t>(b) * Tn;
    const int64_t kv_off = row0 * ld_qkv + kh * hd;
    T* dS = workspace + static_cast<int64_t>(omp_get_thread_num()) * Tn * Tn;
    for (int h = kh * group; h < (kh + 1) * group; ++h) {
      const int64_t q_off = row0 * ld_qkv + h * hd;
      const T* P = att + (static_cast<int64_t>(b) * NH + h) * Tn * Tn;
      const T* dO = dout + row0 * C + h * hd;
      // dV += P^T dO;  dP = dO V^T
      internal::gemm(true, false, Tn, hd, Tn, T(1), P, Tn, dO, C, T(1), dv + kv_off, ld_qkv);
      internal::gemm(false, true, Tn, Tn, hd, T(1), dO, C, v + kv_off, ld_qkv, T(0), dS, Tn);
      // Softmax backward: dS = P * (dP - sum_j dP_j P_j), scaled; zero above the diagonal.
      for (int t = 0; t < Tn; ++t) {
        const T* p = P + static_cast<int64_t>(t) * Tn;
        T* ds = dS + static_cast<int64_t>(t) * Tn;
        T dot = 0;
#pragma omp simd reduction(+ : dot)
        for (int j = 0; j <= t; ++j) dot += ds[j] * p[j];
#pragma omp simd
        for (int j = 0; j <= t; ++j) ds[j] = p[j] * (ds[j] - dot) * scale;
        for (int j = t + 1; j < Tn; ++j) ds[j] = 0;
      }
      // dQ += dS K;  dK += dS^T Q
      internal::gemm(false, false, Tn, hd, Tn, T(1), dS, Tn, k + kv_off, ld_qkv, T(1), dq + q_off,
                     ld_qkv);
      internal::gemm(true, false, Tn, hd, Tn, T(1), dS, Tn, q + q_off, ld_qkv, T(1), dk + kv_off,
                     ld_qkv);
    }
  }
}

template void attention_forward<float>(float*, float*, const float*, const float*, const float*,
                                       int, int, int, int, int, int);
template void attention_forward<double>(double*, double*, const double*, const double*,
                                        const double*, int, int, int, int, int, int);
template void attention_backward<float>(float*, float*, float*, float*, const float*, const float*,
                                        const float*, const float*, const float*, int, int, int,
                                        int, int, int);
template void attention_backward<double>(double*, double*, double*, double*, const double*,
                                         const double*, const double*, const double*, const double*,
                                         int, int, int, int, int, int);

}  // namespace trainscope::kernels
