#include "kernels/matmul_bf16.h"

#include <fmt/format.h>

#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <unordered_map>

#include "kernels/float16.h"

namespace trainscope::kernels {
namespace {

struct Engine {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};
Engine& engine() {
  static Engine e;
  return e;
}

// One matmul primitive per shape: creating one costs far more than a call.
struct Primitive {
  dnnl::memory::desc src, weights, dst;
  dnnl::matmul matmul;
};
const Primitive& primitive(int N, int C, int OC) {
  static std::map<std::tuple<int, int, int>, Primitive> cache;
  const auto key = std::make_tuple(N, C, OC);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  Primitive p;
  p.src = dnnl::memory::desc({N, C}, dt::bf16, tag::ab);
  p.weights = dnnl::memory::desc({C, OC}, dt::bf16, tag::ba);  // our [OC, C] rows, transposed
  p.dst = dnnl::memory::desc({N, OC}, dt::f32, tag::ab);
  p.matmul = dnnl::matmul(dnnl::matmul::primitive_desc(
      dnnl::matmul::desc(p.src, p.weights, p.dst), engine().engine));
  return cache.emplace(key, std::move(p)).first->second;
}

}  // namespace

void matmul_forward_bf16(float* out, const uint16_t* inp, const uint16_t* weight, int N, int C,
                         int OC) {
  const Primitive& p = primitive(N, C, OC);
  Engine& e = engine();
  dnnl::memory src(p.src, e.engine, const_cast<uint16_t*>(inp));
  dnnl::memory weights(p.weights, e.engine, const_cast<uint16_t*>(weight));
  dnnl::memory dst(p.dst, e.engine, out);
  p.matmul.execute(e.stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}});
  e.stream.wait();
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
