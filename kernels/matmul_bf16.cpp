#include "kernels/matmul_bf16.h"

#include <fmt/format.h>

#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <compare>

#include "kernels/float16.h"
#include "kernels/storage.h"

namespace trainscope::kernels {
namespace {

// The engine, its stream, and the one scratchpad every primitive shares
// (primitives run one at a time). oneDNN would otherwise malloc a scratchpad
// per call: tens of MB for the LM head, fresh pages the kernel zeroes on
// every call, outside the memory tracker.
struct Engine {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  Buffer<uint8_t> scratchpad;
};
Engine& engine() {
  static Engine e;
  return e;
}

// dst[M, N] (+)= a[M, K] @ b[K, N], each operand row-major or transposed in
// memory. One primitive per such shape: creating one costs far more than a call.
struct GemmShape {
  int64_t M, N, K;
  bool a_transposed, b_transposed, accumulate;
  auto operator<=>(const GemmShape&) const = default;
};

struct Primitive {
  dnnl::memory::desc a, b, dst, scratchpad;
  dnnl::matmul matmul;
};

// A [rows, cols] bf16 matrix stored row-major, or stored as its transpose.
dnnl::memory::desc bf16_matrix(int64_t rows, int64_t cols, bool transposed) {
  using dt = dnnl::memory::data_type;
  return dnnl::memory::desc({rows, cols}, dt::bf16,
                            transposed ? dnnl::memory::dims{1, rows} : dnnl::memory::dims{cols, 1});
}

const Primitive& primitive(const GemmShape& s) {
  static std::map<GemmShape, Primitive> cache;
  if (auto it = cache.find(s); it != cache.end()) return it->second;
  Primitive p;
  p.a = bf16_matrix(s.M, s.K, s.a_transposed);
  p.b = bf16_matrix(s.K, s.N, s.b_transposed);
  p.dst = dnnl::memory::desc({s.M, s.N}, dnnl::memory::data_type::f32,
                             dnnl::memory::format_tag::ab);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (s.accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);  // dst = dst + a @ b
    attr.set_post_ops(ops);
  }
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.a, p.b, p.dst), attr,
                                        engine().engine);
  p.scratchpad = pd.scratchpad_desc();
  p.matmul = dnnl::matmul(pd);
  // Grown to the largest primitive's need, once, when that primitive is made.
  Buffer<uint8_t>& pad = engine().scratchpad;
  if (p.scratchpad.get_size() > pad.size()) {
    pad = Buffer<uint8_t>(p.scratchpad.get_size(), MemoryCategory::kWorkspace);
  }
  return cache.emplace(s, std::move(p)).first->second;
}

void gemm(const GemmShape& s, float* dst, const uint16_t* a, const uint16_t* b) {
  const Primitive& p = primitive(s);
  Engine& e = engine();
  dnnl::memory ma(p.a, e.engine, const_cast<uint16_t*>(a));
  dnnl::memory mb(p.b, e.engine, const_cast<uint16_t*>(b));
  dnnl::memory md(p.dst, e.engine, dst);
  dnnl::memory pad(p.scratchpad, e.engine, e.scratchpad.data());
  p.matmul.execute(e.stream, {{DNNL_ARG_SRC, ma},
                              {DNNL_ARG_WEIGHTS, mb},
                              {DNNL_ARG_DST, md},
                              {DNNL_ARG_SCRATCHPAD, pad}});
  e.stream.wait();
}

}  // namespace

void matmul_forward_bf16(float* out, const uint16_t* inp, const uint16_t* weight, int N, int C,
                         int OC) {
  // weight [OC, C] is weight^T [C, OC] stored transposed.
  gemm({N, OC, C, false, true, false}, out, inp, weight);
}

void matmul_backward_bf16(float* dinp, float* dweight, const uint16_t* dout, const uint16_t* inp,
                          const uint16_t* weight, int N, int C, int OC) {
  if (dinp != nullptr) gemm({N, C, OC, false, false, true}, dinp, dout, weight);
  // dout^T [OC, N] is dout [N, OC] stored transposed.
  if (dweight != nullptr) gemm({OC, C, N, true, false, true}, dweight, dout, inp);
}

void to_bf16(uint16_t* dst, const float* src, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) dst[i] = float_to_bf16(src[i]);
}

std::string onednn_description() {
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

}  // namespace trainscope::kernels
