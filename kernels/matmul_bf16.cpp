#include "kernels/matmul_bf16.h"

#include <fmt/format.h>

#include <cblas.h>

#include <algorithm>
#include <map>
#include <utility>
#include <oneapi/dnnl/dnnl.hpp>
#include <compare>

#include "kernels/float16.h"
#include "kernels/onednn_matmul.h"
#include "kernels/parallel.h"
#include "kernels/simd_kernels.h"
#include "kernels/storage.h"

namespace trainscope::kernels {
namespace {

// One column chunk of a wide weight gradient, transposed (below).
Buffer<float>& columns_buffer() {
  static Buffer<float> columns;
  return columns;
}

// Grows a tracked workspace buffer to at least n elements, never shrinks it.
template <typename E>
E* at_least(Buffer<E>& buffer, int64_t n) {
  if (std::cmp_less(buffer.size(), n)) buffer = Buffer<E>(n, MemoryCategory::kWorkspace);
  return buffer.data();
}

using GemmShape = internal::OnednnShape;
using internal::onednn_version_and_isa;

Bf16GemmOptions& options() {
  static Bf16GemmOptions o;
  return o;
}

// The emulation: each operand widened to a dense fp32 copy in its own
// layout, then sgemm with fp32 sums, as oneDNN would sum the same products.
float* widen(Buffer<float>& dst, const uint16_t* src, int64_t rows, int64_t cols, int64_t ld) {
  float* out = at_least(dst, rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = bf16_to_float(src[r * ld + c]);
  }
  return out;
}

void emulated_gemm(const GemmShape& s, float* dst, const uint16_t* a, const uint16_t* b) {
  static Buffer<float> wide_a, wide_b;
  // In memory, a transposed [R, C] matrix is C rows of R.
  const int64_t a_rows = s.a_transposed ? s.K : s.M, a_cols = s.a_transposed ? s.M : s.K;
  const int64_t b_rows = s.b_transposed ? s.N : s.K, b_cols = s.b_transposed ? s.K : s.N;
  const float* wa = widen(wide_a, a, a_rows, a_cols, a_cols);
  const float* wb = widen(wide_b, b, b_rows, b_cols, s.ld_b == 0 ? b_cols : s.ld_b);
  cblas_sgemm(CblasRowMajor, s.a_transposed ? CblasTrans : CblasNoTrans,
              s.b_transposed ? CblasTrans : CblasNoTrans, static_cast<int>(s.M),
              static_cast<int>(s.N), static_cast<int>(s.K), 1.0f, wa, static_cast<int>(a_cols), wb,
              static_cast<int>(b_cols), s.accumulate ? 1.0f : 0.0f, dst,
              static_cast<int>(s.ld_dst == 0 ? s.N : s.ld_dst));
}

void gemm(GemmShape s, float* dst, const uint16_t* a, const uint16_t* b) {
  if (options().gemm == Bf16Gemm::kEmulated) return emulated_gemm(s, dst, a, b);
  s.bf16 = true;
  internal::onednn_matmul(s, dst, a, b);
}

// Whether a GEMM with OC output columns (the LM head: OC = vocabulary) runs
// as column chunks of kBf16ColumnChunk. Measured on Zen 5 (AVX512-BF16, 2
// threads, seed's head, 2048 rows): oneDNN runs a chunk, whose rows are
// strided, with its jit GEMM (head forward 118 ms against 142 ms whole), and
// the weight gradient chunk by chunk transposed (below) in 137 ms against 187
// ms for the whole transposed-operand GEMM. That jit GEMM has no AMX kernel
// while the whole GEMM's brgemm does, so with AMX the head runs whole. Fixed
// per CPU, so results stay deterministic.
bool column_chunks(int64_t OC) {
  if (OC <= kBf16ColumnChunk) return false;
  switch (options().columns) {
    case Bf16Columns::kWhole: return false;
    case Bf16Columns::kChunked: return true;
    case Bf16Columns::kAuto: break;
  }
  static const bool amx = dnnl::get_effective_cpu_isa() == dnnl::cpu_isa::avx512_core_amx;
  return !amx;
}

// dweight[o0 + j, c] += columns[c, j] for j < width: one chunk's transposed
// gradient added in tiles, so both sides are read a cache line at a time.
void add_transposed(float* dweight, const float* columns, int64_t width, int64_t C) {
  constexpr int64_t kTile = 16;
#pragma omp parallel for schedule(static)
  for (int64_t j0 = 0; j0 < width; j0 += kTile) {
    const int64_t j1 = std::min(width, j0 + kTile);
    for (int64_t c0 = 0; c0 < C; c0 += kTile) {
      const int64_t c1 = std::min(C, c0 + kTile);
      for (int64_t j = j0; j < j1; ++j) {
        for (int64_t c = c0; c < c1; ++c) dweight[j * C + c] += columns[c * width + j];
      }
    }
  }
}

}  // namespace

void matmul_forward_bf16(float* out, const uint16_t* inp, const uint16_t* weight, int N, int C,
                         int OC) {
  // weight [OC, C] is weight^T [C, OC] stored transposed.
  if (!column_chunks(OC)) return gemm({N, OC, C, false, true, false}, out, inp, weight);
  for (int64_t o0 = 0; o0 < OC; o0 += kBf16ColumnChunk) {
    const int64_t width = std::min<int64_t>(kBf16ColumnChunk, OC - o0);
    gemm({N, width, C, false, true, false, 0, OC}, out + o0, inp, weight + o0 * C);
  }
}

void matmul_backward_bf16(float* dinp, float* dweight, const uint16_t* dout, const uint16_t* inp,
                          const uint16_t* weight, int N, int C, int OC) {
  if (dinp != nullptr) gemm({N, C, OC, false, false, true}, dinp, dout, weight);
  if (dweight == nullptr) return;
  // dout^T [OC, N] is dout [N, OC] stored transposed.
  if (!column_chunks(OC)) return gemm({OC, C, N, true, false, true}, dweight, dout, inp);
  // Chunk by chunk: columns [C, width] = inp^T [C, N] @ dout[:, o0:o0 + width],
  // then added transposed into dweight's rows o0...
  float* columns = at_least(columns_buffer(), int64_t{C} * kBf16ColumnChunk);
  for (int64_t o0 = 0; o0 < OC; o0 += kBf16ColumnChunk) {
    const int64_t width = std::min<int64_t>(kBf16ColumnChunk, OC - o0);
    gemm({C, width, N, true, false, false, OC, 0}, columns, inp, dout + o0);
    add_transposed(dweight + o0 * C, columns, width, C);
  }
}

void to_bf16(uint16_t* dst, const float* src, int64_t n) {
  if (internal::simd_enabled()) {
    return internal::parallel_ranges(
        n, [&](int64_t i0, int64_t i1) { internal::to_bf16(dst + i0, src + i0, i1 - i0); });
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) dst[i] = float_to_bf16(src[i]);
}

void set_bf16_gemm_options(const Bf16GemmOptions& o) { options() = o; }
Bf16GemmOptions bf16_gemm_options() { return options(); }

std::string onednn_bf16_unavailable() {
  static const std::string why = [] {
    try {
      const uint16_t zeros[4] = {};
      float out[4];
      internal::onednn_matmul({.M = 2, .N = 2, .K = 2, .a_transposed = false, .b_transposed = true,
                               .accumulate = false, .bf16 = true},
                              out, zeros, zeros);
      return std::string();
    } catch (const dnnl::error& e) {
      return fmt::format("{} has no bf16 matmul ({})", onednn_version_and_isa(), e.what());
    }
  }();
  return why;
}

std::string onednn_description() {
  if (options().gemm == Bf16Gemm::kEmulated) {
    return "emulated: bf16 operands widened to fp32, OpenBLAS sgemm (tests only)";
  }
  return onednn_version_and_isa();
}

}  // namespace trainscope::kernels
