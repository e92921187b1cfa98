#include "kernels/attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/gemm.h"
#include "kernels/gemm_backend.h"
#include "kernels/onednn_matmul.h"
#include "kernels/parallel.h"
#include "kernels/simd_kernels.h"

namespace trainscope::kernels {

namespace {

// Query rows per tile: large enough for the GEMMs to run near their peak,
// small enough that a tile's scores (kQueryTile x T) stay in L2.
constexpr int kQueryTile = 64;

int query_tile(int Tn) { return std::min(kQueryTile, Tn); }

// A tile's GEMM: C = alpha op(A) op(B) + beta C, beta 0 or 1, on OpenBLAS or
// oneDNN. At these shapes (K or N = head dims, 64) OpenBLAS runs at a
// fraction of its peak, oneDNN's matmul several times faster on some CPUs
// (docs/RESULTS.md): which one is the GEMM library's choice for the tile's
// typical shape (use_onednn).
struct TileGemm {
  bool onednn = false;
  void operator()(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                  const float* B, int ldb, float beta, float* C, int ldc) const {
    if (!onednn) {
      internal::gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
      return;
    }
    internal::onednn_matmul({.M = M,
                             .N = N,
                             .K = K,
                             .a_transposed = ta,
                             .b_transposed = tb,
                             .accumulate = beta != 0,
                             .ld_b = ldb,
                             .ld_dst = ldc,
                             .ld_a = lda,
                             .alpha = alpha},
                            C, A, B);
  }
  void operator()(bool ta, bool tb, int M, int N, int K, double alpha, const double* A, int lda,
                  const double* B, int ldb, double beta, double* C, int ldc) const {
    internal::gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
};

// A tile's GEMMs run thousands of times a step: worth timing under --gemm
// auto from far below kAutoMinFlops (a seed tile's scores: 4.2 MFLOP).
constexpr double kTileMinFlops = 1e6;

// Decided once per call, outside the parallel loop: the library's choice for
// a whole tile's scores (tile x Tn x hd), timed once under --gemm auto at
// one thread, as each tile runs.
template <typename T>
TileGemm tile_gemm(int Tn, int hd) {
  if constexpr (!std::is_same_v<T, float>) return {};
  const GemmKey typical{query_tile(Tn), Tn, hd, false, true, false};
  return {backend_for_one_thread(typical, kTileMinFlops) == GemmBackend::kOneDnn};
}

// One tile's causal scores P[R, kmax] (row stride kmax) for query rows
// r0..r0+R-1 against keys 0..kmax-1 (kmax = r0 + R): S = scale q k^T, then
// in each row t the keys j <= t (the rest zeroed). With `lse` null, P =
// softmax(S) and the rows' log-sum-exp go to lse_out; else P = exp(S - lse)
// as forward made it. float runs the dispatched vector code unless simd is
// false (the reference, kernels/simd.h).
template <typename T>
void causal_tile_scores(const TileGemm& gemm, T* P, const T* qt, const T* k, int ld_qkv, int r0,
                        int R, int hd, T scale, const T* lse, T* lse_out, bool simd) {
  const int kmax = r0 + R;
  gemm(false, true, R, kmax, hd, scale, qt, ld_qkv, k, ld_qkv, T(0), P, kmax);
  if constexpr (std::is_same_v<T, float>) {
    if (simd && lse != nullptr) return internal::exp_tile(P, lse, r0, R, kmax);
    if (simd) return internal::softmax_tile(P, lse_out, r0, R, kmax);
  }
  for (int i = 0; i < R; ++i) {
    const int t = r0 + i;
    T* row = P + static_cast<int64_t>(i) * kmax;
    if (lse != nullptr) {
      const T m = lse[t];
#pragma omp simd
      for (int j = 0; j <= t; ++j) row[j] = internal::fast_exp(row[j] - m);
    } else {
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
      lse_out[t] = mx + std::log(sum);
    }
    for (int j = t + 1; j < kmax; ++j) row[j] = 0;
  }
}

// dS = P (dS - rowsum(dS P)) scale over each row's keys [0, t] (the rest
// zeroed), as causal_tile_scores.
template <typename T>
void causal_tile_dsoftmax(T* dS, const T* P, int r0, int R, int kmax, T scale, bool simd) {
  if constexpr (std::is_same_v<T, float>) {
    if (simd) return internal::softmax_backward_tile(dS, P, r0, R, kmax, scale);
  }
  for (int i = 0; i < R; ++i) {
    const int t = r0 + i;
    const T* p = P + static_cast<int64_t>(i) * kmax;
    T* ds = dS + static_cast<int64_t>(i) * kmax;
    T dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int j = 0; j <= t; ++j) dot += ds[j] * p[j];
#pragma omp simd
    for (int j = 0; j <= t; ++j) ds[j] = p[j] * (ds[j] - dot) * scale;
    for (int j = t + 1; j < kmax; ++j) ds[j] = 0;
  }
}

}  // namespace

std::size_t attention_workspace_size(int Tn, int threads) {
  // Per thread: a tile's probabilities and their gradient.
  return static_cast<std::size_t>(threads) * 2 * query_tile(Tn) * Tn;
}

// Per (batch, head), tile by tile of query rows: the tile's scores against
// the keys up to its last row (causal: nothing later is computed), the
// softmax of each whole row, out = P v. The (b, h) pairs run on separate
// threads; OpenBLAS runs single-threaded inside an OpenMP parallel region.
template <typename T>
void attention_forward(T* out, T* lse, T* workspace, const T* q, const T* k, const T* v, int B,
                       int Tn, int NH, int NKV, int hd, int ld_qkv) {
  const int C = NH * hd, group = NH / NKV, tile = query_tile(Tn);
  const T scale = T(1) / std::sqrt(static_cast<T>(hd));
  const TileGemm gemm = tile_gemm<T>(Tn, hd);
  const bool simd = internal::simd_enabled();
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < B * NH; ++bh) {
    const int b = bh / NH, h = bh % NH;
    const int64_t row0 = static_cast<int64_t>(b) * Tn;
    const T* qb = q + row0 * ld_qkv + h * hd;
    const T* kb = k + row0 * ld_qkv + (h / group) * hd;
    const T* vb = v + row0 * ld_qkv + (h / group) * hd;
    T* P = workspace + static_cast<int64_t>(omp_get_thread_num()) * 2 * tile * Tn;
    T* lse_bh = lse + static_cast<int64_t>(bh) * Tn;
    for (int r0 = 0; r0 < Tn; r0 += tile) {
      const int R = std::min(tile, Tn - r0), kmax = r0 + R;
      causal_tile_scores(gemm, P, qb + int64_t{r0} * ld_qkv, kb, ld_qkv, r0, R, hd, scale,
                         static_cast<const T*>(nullptr), lse_bh, simd);
      gemm(false, false, R, hd, kmax, T(1), P, kmax, vb, ld_qkv, T(0),
           out + (row0 + r0) * C + h * hd, C);
    }
  }
}

// Per (batch, kv head), its query heads in order, tile by tile: the tile's
// probabilities again from the saved log-sum-exp, then
//   dV += P^T dO;  dP = dO V^T;  dS = P (dP - rowsum(dP P)) scale;
//   dQ += dS K;  dK += dS^T Q.
template <typename T>
void attention_backward(T* dq, T* dk, T* dv, T* workspace, const T* dout, const T* lse, const T* q,
                        const T* k, const T* v, int B, int Tn, int NH, int NKV, int hd,
                        int ld_qkv) {
  const int C = NH * hd, group = NH / NKV, tile = query_tile(Tn);
  const T scale = T(1) / std::sqrt(static_cast<T>(hd));
  const TileGemm gemm = tile_gemm<T>(Tn, hd);
  const bool simd = internal::simd_enabled();
#pragma omp parallel for schedule(static)
  for (int bk = 0; bk < B * NKV; ++bk) {
    const int b = bk / NKV, kh = bk % NKV;
    const int64_t row0 = static_cast<int64_t>(b) * Tn;
    const int64_t kv_off = row0 * ld_qkv + kh * hd;
    T* P = workspace + static_cast<int64_t>(omp_get_thread_num()) * 2 * tile * Tn;
    T* dS = P + static_cast<int64_t>(tile) * Tn;
    for (int h = kh * group; h < (kh + 1) * group; ++h) {
      const T* lse_bh = lse + (static_cast<int64_t>(b) * NH + h) * Tn;
      for (int r0 = 0; r0 < Tn; r0 += tile) {
        const int R = std::min(tile, Tn - r0), kmax = r0 + R;
        const int64_t q_off = (row0 + r0) * ld_qkv + h * hd;
        const T* dO = dout + (row0 + r0) * C + h * hd;
        causal_tile_scores(gemm, P, q + q_off, k + kv_off, ld_qkv, r0, R, hd, scale, lse_bh,
                           static_cast<T*>(nullptr), simd);
        gemm(true, false, kmax, hd, R, T(1), P, kmax, dO, C, T(1), dv + kv_off, ld_qkv);
        gemm(false, true, R, kmax, hd, T(1), dO, C, v + kv_off, ld_qkv, T(0), dS, kmax);
        causal_tile_dsoftmax(dS, P, r0, R, kmax, scale, simd);
        gemm(false, false, R, hd, kmax, T(1), dS, kmax, k + kv_off, ld_qkv, T(1), dq + q_off,
             ld_qkv);
        gemm(true, false, kmax, hd, R, T(1), dS, kmax, q + q_off, ld_qkv, T(1), dk + kv_off,
             ld_qkv);
      }
    }
  }
}

template void attention_forward<float>(float*, float*, float*, const float*, const float*,
                                       const float*, int, int, int, int, int, int);
template void attention_forward<double>(double*, double*, double*, const double*, const double*,
                                        const double*, int, int, int, int, int, int);
template void attention_backward<float>(float*, float*, float*, float*, const float*, const float*,
                                        const float*, const float*, const float*, int, int, int,
                                        int, int, int);
template void attention_backward<double>(double*, double*, double*, double*, const double*,
                                         const double*, const double*, const double*, const double*,
                                         int, int, int, int, int, int);

}  // namespace trainscope::kernels
