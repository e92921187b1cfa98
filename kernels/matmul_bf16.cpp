#include "kernels/matmul_bf16.h"

#include <fmt/format.h>

#include <cblas.h>

#include <algorithm>
#include <map>
#include <utility>
#include <oneapi/dnnl/dnnl.hpp>
#include <compare>

#include "kernels/float16.h"
#include "kernels/storage.h"

namespace trainscope::kernels {
namespace {

// The engine, its stream, and the one scratchpad every primitive shares
// (primitives run one at a time). oneDNN would otherwise malloc a scratchpad
// per call: tens of MB for the LM head, fresh pages the kernel zeroes on
// every call, outside the memory tracker. `columns` holds one column chunk of
// a wide weight gradient, transposed (below).
struct Engine {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  Buffer<uint8_t> scratchpad;
  Buffer<float> columns;
};
Engine& engine() {
  static Engine e;
  return e;
}

// Grows a tracked workspace buffer to at least n elements, never shrinks it.
template <typename E>
E* at_least(Buffer<E>& buffer, int64_t n) {
  if (std::cmp_less(buffer.size(), n)) buffer = Buffer<E>(n, MemoryCategory::kWorkspace);
  return buffer.data();
}

// dst[M, N] (+)= a[M, K] @ b[K, N], each operand row-major or transposed in
// memory; b's and dst's rows may be longer than N (ld_b, ld_dst; 0 means N):
// a column chunk of a wider matrix. One primitive per such shape: creating
// one costs far more than a call.
struct GemmShape {
  int64_t M, N, K;
  bool a_transposed, b_transposed, accumulate;
  int64_t ld_b = 0, ld_dst = 0;
  auto operator<=>(const GemmShape&) const = default;
};

struct Primitive {
  dnnl::memory::desc a, b, dst, scratchpad;
  dnnl::matmul matmul;
};

// A [rows, cols] matrix stored row-major with rows ld apart, or stored as its
// transpose (columns ld apart); ld 0 means dense.
dnnl::memory::desc matrix(int64_t rows, int64_t cols, bool transposed, int64_t ld,
                          dnnl::memory::data_type type) {
  if (ld == 0) ld = transposed ? rows : cols;
  return dnnl::memory::desc({rows, cols}, type,
                            transposed ? dnnl::memory::dims{1, ld} : dnnl::memory::dims{ld, 1});
}

const Primitive& primitive(const GemmShape& s) {
  using dt = dnnl::memory::data_type;
  static std::map<GemmShape, Primitive> cache;
  if (auto it = cache.find(s); it != cache.end()) return it->second;
  Primitive p;
  p.a = matrix(s.M, s.K, s.a_transposed, 0, dt::bf16);
  p.b = matrix(s.K, s.N, s.b_transposed, s.ld_b, dt::bf16);
  p.dst = matrix(s.M, s.N, false, s.ld_dst, dt::f32);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (s.accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);  // dst = dst + a @ b
    attr.set_post_ops(ops);
  }
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.a, p.b, p.dst), attr, engine().engine);
  p.scratchpad = pd.scratchpad_desc();
  p.matmul = dnnl::matmul(pd);
  // Grown to the largest primitive's need, once, when that primitive is made.
  at_least(engine().scratchpad, static_cast<int64_t>(p.scratchpad.get_size()));
  return cache.emplace(s, std::move(p)).first->second;
}

std::string onednn_version_and_isa() {
  using isa = dnnl::cpu_isa;
  const dnnl_version_t* v = dnnl_version();
  const char* name = "other";
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::avx512_core_amx: name = "avx512_core_amx"; break;
    case isa::avx512_core_bf16: name = "avx512_core_bf16"; break;
    case isa::avx512_core_vnni: name = "avx512_core_vnni"; break;
    case isa::avx512_core: name = "avx512_core"; break;
    case isa::avx2_vnni: name = "avx2_vnni"; break;
    case isa::avx2: name = "avx2"; break;
    default: break;
  }
  return fmt::format("oneDNN {}.{}.{}, CPU ISA {}", v->major, v->minor, v->patch, name);
}

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

void gemm(const GemmShape& s, float* dst, const uint16_t* a, const uint16_t* b) {
  if (options().gemm == Bf16Gemm::kEmulated) return emulated_gemm(s, dst, a, b);
  const Primitive& p = primitive(s);
  Engine& e = engine();
  dnnl::memory ma(p.a, e.engine, const_cast<uint16_t*>(a));
  dnnl::memory mb(p.b, e.engine, const_cast<uint16_t*>(b));
  dnnl::memory md(p.dst, e.engine, dst);
  dnnl::memory pad(p.scratchpad, e.engine, e.scratchpad.data());
  p.matmul.execute(
      e.stream,
      {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, md}, {DNNL_ARG_SCRATCHPAD, pad}});
  e.stream.wait();
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
  float* columns = at_least(engine().columns, int64_t{C} * kBf16ColumnChunk);
  for (int64_t o0 = 0; o0 < OC; o0 += kBf16ColumnChunk) {
    const int64_t width = std::min<int64_t>(kBf16ColumnChunk, OC - o0);
    gemm({C, width, N, true, false, false, OC, 0}, columns, inp, dout + o0);
    add_transposed(dweight + o0 * C, columns, width, C);
  }
}

void to_bf16(uint16_t* dst, const float* src, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) dst[i] = float_to_bf16(src[i]);
}

void set_bf16_gemm_options(const Bf16GemmOptions& o) { options() = o; }
Bf16GemmOptions bf16_gemm_options() { return options(); }

std::string onednn_bf16_unavailable() {
  static const std::string why = [] {
    try {
      primitive({2, 2, 2, false, true, false});
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
