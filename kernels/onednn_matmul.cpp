#include "kernels/onednn_matmul.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <mutex>
#include <utility>

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/storage.h"

namespace trainscope::kernels::internal {
namespace {

// The engine, and the lock of the cache of primitives all threads share
// (primitive()).
struct Engine {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex cache_mutex;
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

struct Primitive {
  dnnl::memory::desc a, b, dst, scratchpad;
  dnnl::matmul matmul;
};

// A primitive is made for the OpenMP threads there are when it is made
// (oneDNN splits its work for them, as its own cache's key says): a shape
// timed at one thread and run at two is two primitives.
using PrimitiveKey = std::pair<int, OnednnShape>;
PrimitiveKey key_now(const OnednnShape& s) { return {omp_get_max_threads(), s}; }

// Per thread (attention runs its tiles' GEMMs from every OpenMP thread): a
// stream, the scratchpad its primitives share (a thread runs one at a
// time; oneDNN would otherwise malloc one per call: tens of MB for the LM
// head, fresh pages the kernel zeroes on every call, outside the memory
// tracker), and the primitives it has met, so a call takes the shared
// cache's lock only the first time a thread meets a shape.
struct PerThread {
  std::optional<dnnl::stream> stream;
  Buffer<uint8_t> scratchpad;
  std::map<PrimitiveKey, const Primitive*> primitives;
};
PerThread& mine() {
  thread_local PerThread t;
  if (!t.stream) t.stream.emplace(engine().engine);
  return t;
}

// A [rows, cols] matrix stored row-major with rows ld apart, or stored as its
// transpose (columns ld apart); ld 0 means dense.
dnnl::memory::desc matrix(int64_t rows, int64_t cols, bool transposed, int64_t ld,
                          dnnl::memory::data_type type) {
  if (ld == 0) ld = transposed ? rows : cols;
  return dnnl::memory::desc({rows, cols}, type,
                            transposed ? dnnl::memory::dims{1, ld} : dnnl::memory::dims{ld, 1});
}

// References into a std::map stay valid as it grows.
const Primitive& primitive(const PrimitiveKey& key) {
  using dt = dnnl::memory::data_type;
  static std::map<PrimitiveKey, Primitive> cache;
  const std::lock_guard lock(engine().cache_mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const OnednnShape& s = key.second;
  Primitive p;
  const dt in = s.bf16 ? dt::bf16 : dt::f32;
  p.a = matrix(s.M, s.K, s.a_transposed, s.ld_a, in);
  p.b = matrix(s.K, s.N, s.b_transposed, s.ld_b, in);
  p.dst = matrix(s.M, s.N, false, s.ld_dst, dt::f32);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (s.alpha != 1) attr.set_output_scales(0, {s.alpha});
  if (s.accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);  // dst = dst + a @ b
    attr.set_post_ops(ops);
  }
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.a, p.b, p.dst), attr, engine().engine);
  p.scratchpad = pd.scratchpad_desc();
  p.matmul = dnnl::matmul(pd);
  return cache.emplace(key, std::move(p)).first->second;
}

}  // namespace

void onednn_matmul(const OnednnShape& s, float* dst, const void* a, const void* b) {
  Engine& e = engine();
  PerThread& t = mine();
  const PrimitiveKey key = key_now(s);
  const Primitive*& known = t.primitives[key];
  if (known == nullptr) known = &primitive(key);
  const Primitive& p = *known;
  // This thread's scratchpad, grown to the largest need it has met.
  uint8_t* scratch = at_least(t.scratchpad, static_cast<int64_t>(p.scratchpad.get_size()));
  dnnl::memory ma(p.a, e.engine, const_cast<void*>(a));
  dnnl::memory mb(p.b, e.engine, const_cast<void*>(b));
  dnnl::memory md(p.dst, e.engine, dst);
  dnnl::memory pad(p.scratchpad, e.engine, scratch);
  p.matmul.execute(
      *t.stream,
      {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, md}, {DNNL_ARG_SCRATCHPAD, pad}});
  t.stream->wait();
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

}  // namespace trainscope::kernels::internal
