// The kernels of a training step other than the projection GEMMs, at the
// `seed` preset's shapes (4 layers, C 256, 4 heads of 64, F 512, V 50257;
// batch 4 x block 512, whose 511 predicted positions make T = 511 and
// N = 2044 rows, as a training step runs them): AdamW with the clip scale in
// its pass, the global gradient norm, RMSNorm (and the residual add fused
// into it), SwiGLU and RoPE forward and backward, softmax-cross-entropy over
// a chunk of the head's logits, all memory-bound, and causal attention
// forward and backward and the LM head with its loss, which are BLAS-bound
// (issues 26 and 35).
//
//   build/bench/kernels_bench --benchmark_min_time=0.2
//   OMP_NUM_THREADS=2 build/bench/kernels_bench --benchmark_filter=Adamw
//   build/bench/kernels_bench --benchmark_filter='Swiglu.*cold:1' --benchmark_repetitions=9
//       --benchmark_enable_random_interleaving=true          (one command line)
//
// Levels (issue 35): each kernel runs at every level of its vector code this
// CPU runs (simd:AVX3, simd:AVX2, ... kernels/simd.h), each level's own
// code, and on the reference templates (simd:reference: the float kernels
// as they were, compiled as the rest of the project is). Attention and the
// head also run GEMMs, which follow OpenBLAS's core and oneDNN's ISA, not
// the level: for the whole of a weaker CPU run the program under
// TRAINSCOPE_MAX_CPU_ISA=avx2 DNNL_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell
// (the context block names the GEMMs' kernels).
//
// Threads: 1 (OpenMP and OpenBLAS) unless OMP_NUM_THREADS says otherwise;
// the context block at the top names them.
//
// Counters. bytes_per_second: the bytes the kernel must move at the least
// (each benchmark's comment says which) over its time. of_memcpy: that rate
// over the traffic of a 256 MiB memcpy timed once at start on as many
// threads (a memcpy reads and writes each byte: traffic = 2 x bytes copied).
// A kernel's stores also read their lines first where memcpy's non-temporal
// stores (glibc's, past 114 MiB on our VM) do not, so a kernel that writes
// as much as it reads tops out below 1. GFLOP/s (attention): the causal triangle's products only.
// of_sgemm (the head): the same GEMMs alone, timed just before, over the
// head's time: 1 when the loss between them costs nothing.
//
// cold:1 rotates the calls through copies of the operands, 1 GiB of them,
// well past the caches (the VM we time on reports a 300 MiB L3), as the
// memcpy is; cold:0 calls on the same operands every time, cache-resident
// where they fit (one [N, C] activation is 2 MiB). AdamW and the norm, whose
// operands are the whole parameter arena, run cold only.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <fmt/format.h>
#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <vector>

#include "base/check.h"
#include "bench/kernels_context.h"
#include "kernels/adamw.h"
#include "kernels/attention.h"
#include "kernels/elementwise.h"
#include "kernels/gemm_backend.h"
#include "kernels/matmul.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/simd.h"
#include "kernels/softmax_xent.h"
#include "kernels/storage.h"
#include "kernels/thread_count.h"
#include "kernels/swiglu.h"
#include "profiler/copy_probe.h"
#include "training/llama_model.h"
#include "training/model_config.h"
#include "training/param_layout.h"

namespace {
using namespace trainscope;
using kernels::Buffer;
using kernels::MemoryCategory;

// What a seed training step hands the kernels.
struct Shapes {
  training::ModelConfig config = training::model_preset("seed");
  int B = config.default_batch, T = config.default_block - 1, N = B * T;
  int C = config.dim, NH = config.n_heads, NKV = config.kv_heads(), hd = config.head_dim();
  int Q = config.q_dim(), KV = config.kv_dim(), W = Q + 2 * KV, F = config.mlp_dim;
  int V = config.vocab_size, head_rows = training::LlamaModel<float>::head_chunk_rows(config, N);
  // Every weight is trained: the arena AdamW updates and the norm reads.
  std::size_t params = static_cast<std::size_t>(training::ParamLayout(config).total());
};
const Shapes& shapes() {
  static const Shapes s;
  return s;
}

constexpr std::size_t kPoolFloats = (std::size_t{1} << 30) / sizeof(float);
float* g_pool = nullptr;  // kPoolFloats, allocated once in main
double g_memcpy_bps = 0;  // memcpy's traffic, bytes read + written per second

// One call's operands, carved from the pool, `sizes` floats each, every one
// 64-byte aligned; cold: as many copies as the pool holds, call i on copy
// i mod copies. Filled afresh for every run of a benchmark, so no values
// left by another kernel (large sums, denormals) slow this one.
class Operands {
 public:
  Operands(std::initializer_list<std::size_t> sizes, bool cold) {
    for (std::size_t n : sizes) {
      offsets_.push_back(stride_);
      stride_ += (n + 15) / 16 * 16;
    }
    TS_CHECK(stride_ <= kPoolFloats) << "one copy of the operands is larger than the pool";
    copies_ = cold ? static_cast<int64_t>(kPoolFloats / stride_) : 1;
    const std::size_t used = static_cast<std::size_t>(copies_) * stride_;
    // In [0.5, 1.5): positive, as AdamW's second moment must be.
    for (std::size_t i = 0; i < used; ++i) {
      g_pool[i] = 0.5f + static_cast<float>(i & 1023) * (1.0f / 1024);
    }
  }
  float* operator()(int64_t call, int operand) const {
    return g_pool + static_cast<std::size_t>(call % copies_) * stride_ + offsets_[operand];
  }

 private:
  std::vector<std::size_t> offsets_;
  std::size_t stride_ = 0;
  int64_t copies_ = 1;
};

// Runs call(0), call(1), ... as the benchmark's iterations; returns their
// wall time, the time Google Benchmark reports (UseRealTime), so that
// of_memcpy can be a plain fraction: its rate counters print "/s".
template <typename Call>
double timed_calls(benchmark::State& state, Call&& call) {
  const auto start = std::chrono::steady_clock::now();
  int64_t i = 0;
  for (auto _ : state) call(i++);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void report_traffic(benchmark::State& state, double bytes, double seconds) {
  const double total = bytes * static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(total));
  state.counters["of_memcpy"] = seconds > 0 ? total / seconds / g_memcpy_bps : 0;
}

// ---- optimizer ----------------------------------------------------------------
// p, m, v read and written, g read: 28 bytes a parameter. The clip scale is
// applied in the same pass (training/run/step.cpp), the step count grows.
void BM_AdamwClipped(benchmark::State& state) {
  const std::size_t n = shapes().params;
  const Operands ops({n, n, n, n}, true);
  const kernels::AdamWParams hp;
  const double seconds = timed_calls(state, [&](int64_t call) {
    kernels::adamw_update(ops(call, 0), ops(call, 1), ops(call, 2), ops(call, 3), n, hp, call + 1,
                          0.5f);
  });
  report_traffic(state, 28.0 * static_cast<double>(n), seconds);
}

// The gradient read once: 4 bytes a parameter.
void BM_GlobalNorm(benchmark::State& state) {
  const std::size_t n = shapes().params;
  const Operands ops({n}, true);
  const double seconds = timed_calls(state, [&](int64_t call) {
    benchmark::DoNotOptimize(kernels::global_norm(ops(call, 0), n));
  });
  report_traffic(state, 4.0 * static_cast<double>(n), seconds);
}

// ---- RMSNorm --------------------------------------------------------------------
// inp [N, C] read, out [N, C] written; rstd [N] written, weight [C] read.
void BM_RmsnormForward(benchmark::State& state) {
  const Shapes& s = shapes();
  const std::size_t NC = std::size_t(s.N) * s.C;
  const Operands ops({NC, std::size_t(s.N), NC, std::size_t(s.C)}, state.range(0) != 0);
  const double seconds = timed_calls(state, [&](int64_t call) {
    kernels::rmsnorm_forward(ops(call, 0), ops(call, 1), ops(call, 2), ops(call, 3), s.N, s.C,
                             s.config.norm_eps);
  });
  report_traffic(state, 4.0 * (2.0 * NC + s.N + s.C), seconds);
}

// The residual add and the norm after it, as the model runs them (fused:1,
// one pass) and as two kernels (fused:0): x [N, C] and residual [N, C] read,
// x written (the sum), out [N, C] written, rstd [N] written, weight [C] read.
void BM_ResidualAddRmsnorm(benchmark::State& state) {
  const Shapes& s = shapes();
  const std::size_t NC = std::size_t(s.N) * s.C;
  const Operands ops({NC, NC, std::size_t(s.N), NC, std::size_t(s.C)}, state.range(0) != 0);
  const bool fused = state.range(1) != 0;
  const float eps = s.config.norm_eps;
  const double seconds = timed_calls(state, [&](int64_t call) {
    float *x = ops(call, 0), *out = ops(call, 1), *rstd = ops(call, 2), *res = ops(call, 3);
    if (fused) {
      kernels::add_rmsnorm_forward(x, out, rstd, res, ops(call, 4), s.N, s.C, eps);
    } else {
      kernels::add_forward(x, x, res, NC);
      kernels::rmsnorm_forward(out, rstd, x, ops(call, 4), s.N, s.C, eps);
    }
  });
  report_traffic(state, 4.0 * (4.0 * NC + s.N + s.C), seconds);
}

// dout, inp [N, C] read, dinp [N, C] read and written (it accumulates);
// rstd [N], weight [C] read, dweight [C] read and written.
void BM_RmsnormBackward(benchmark::State& state) {
  const Shapes& s = shapes();
  const std::size_t NC = std::size_t(s.N) * s.C, C = s.C;
  const Operands ops({NC, C, NC, NC, C, std::size_t(s.N)}, state.range(0) != 0);
  const double seconds = timed_calls(state, [&](int64_t call) {
    kernels::rmsnorm_backward(ops(call, 0), ops(call, 1), ops(call, 2), ops(call, 3), ops(call, 4),
                              ops(call, 5), s.N, s.C);
  });
  report_traffic(state, 4.0 * (4.0 * NC + s.N + 3.0 * s.C), seconds);
}

// ---- SwiGLU ---------------------------------------------------------------------
// gu [N, 2F] read, out [N, F] written: 12 bytes a row element of F.
void BM_SwigluForward(benchmark::State& state) {
  const Shapes& s = shapes();
  const std::size_t NF = std::size_t(s.N) * s.F;
  const Operands ops({NF, 2 * NF}, state.range(0) != 0);
  const double seconds = timed_calls(
      state, [&](int64_t call) { kernels::swiglu_forward(ops(call, 0), ops(call, 1), s.N, s.F); });
  report_traffic(state, 4.0 * 3.0 * NF, seconds);
}

// dout [N, F], gu [N, 2F] read, dgu [N, 2F] read and written: 28 bytes a
// row element of F.
void BM_SwigluBackward(benchmark::State& state) {
  const Shapes& s = shapes();
  const std::size_t NF = std::size_t(s.N) * s.F;
  const Operands ops({2 * NF, NF, 2 * NF}, state.range(0) != 0);
  const double seconds = timed_calls(state, [&](int64_t call) {
    kernels::swiglu_backward(ops(call, 0), ops(call, 1), ops(call, 2), s.N, s.F);
  });
  report_traffic(state, 4.0 * 7.0 * NF, seconds);
}

// ---- RoPE -----------------------------------------------------------------------
// As a layer runs it (fused:1): q [N, Q] and k [N, KV] side by side in one
// call, or a call for each (fused:0), inside the fused qkv rows
// [N, W], rotated in place (read and written), and the cos and sin tables
// [T, hd/2] read. v, a third of each row, is not touched.
void rope_bench(benchmark::State& state, bool backward) {
  const Shapes& s = shapes();
  const int half = s.hd / 2;
  Buffer<float> cos_table(std::size_t(s.T) * half, MemoryCategory::kWorkspace);
  Buffer<float> sin_table(std::size_t(s.T) * half, MemoryCategory::kWorkspace);
  kernels::rope_tables(cos_table.data(), sin_table.data(), s.T, s.hd, s.config.rope_theta);
  const Operands ops({std::size_t(s.N) * s.W}, state.range(0) != 0);
  auto rotate = backward ? kernels::rope_backward<float> : kernels::rope_forward<float>;
  const bool fused = state.range(1) != 0;
  const double seconds = timed_calls(state, [&](int64_t call) {
    float* qkv = ops(call, 0);
    if (fused) {
      rotate(qkv, cos_table.data(), sin_table.data(), s.B, s.T, s.NH + s.NKV, s.hd, s.W);
    } else {
      rotate(qkv, cos_table.data(), sin_table.data(), s.B, s.T, s.NH, s.hd, s.W);
      rotate(qkv + s.Q, cos_table.data(), sin_table.data(), s.B, s.T, s.NKV, s.hd, s.W);
    }
  });
  report_traffic(state, 4.0 * (2.0 * s.N * (s.Q + s.KV) + 2.0 * s.T * half), seconds);
}
void BM_RopeForward(benchmark::State& state) { rope_bench(state, false); }
void BM_RopeBackward(benchmark::State& state) { rope_bench(state, true); }

// ---- softmax-cross-entropy ---------------------------------------------------------
// One chunk of the LM head's logits [R, V] (R = head_rows, about 32 MiB), the
// loss and the gradient written in place, as LlamaModel::head_and_loss runs
// it: each logit read and its gradient written, 8 bytes.
void BM_SoftmaxXent(benchmark::State& state) {
  const Shapes& s = shapes();
  const std::size_t RV = std::size_t(s.head_rows) * s.V;
  const Operands ops({RV}, state.range(0) != 0);
  std::vector<int32_t> targets(s.head_rows);
  for (int r = 0; r < s.head_rows; ++r) targets[r] = (r * 7919) % s.V;
  const double seconds = timed_calls(state, [&](int64_t call) {
    int64_t predicted = 0;
    benchmark::DoNotOptimize(kernels::softmax_xent_forward(
        ops(call, 0), targets.data(), s.head_rows, s.V, 1.0 / s.N, &predicted));
  });
  report_traffic(state, 8.0 * static_cast<double>(RV), seconds);
}

// ---- the LM head with its loss -----------------------------------------------------
// LlamaModel::head_and_loss on N rows, a chunk of head_rows at a time:
// logits [R, V] = x [R, C] W^T, the loss and its gradient g in place, then
// dx [R, C] += g W and dW [V, C] += g^T x (each GEMM on the library --gemm
// auto picks for its shape, as in the model). Without the loss: the same
// GEMMs alone, the head's ceiling.
struct HeadOperands {
  const Shapes& s = shapes();
  Buffer<float> x{std::size_t(s.N) * s.C, MemoryCategory::kActivations};
  Buffer<float> weight{std::size_t(s.V) * s.C, MemoryCategory::kParameters};
  Buffer<float> dx{std::size_t(s.N) * s.C, MemoryCategory::kGradients};
  Buffer<float> dweight{std::size_t(s.V) * s.C, MemoryCategory::kGradients};
  Buffer<float> chunk{std::size_t(s.head_rows) * s.V, MemoryCategory::kWorkspace};
  std::vector<int32_t> targets = std::vector<int32_t>(s.N);
  HeadOperands() {
    // Logits of a few tenths, as seed's initial weights (normal, 0.02) give.
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
    for (std::size_t i = 0; i < weight.size(); ++i) {
      weight[i] = 0.02f * std::cos(0.11f * static_cast<float>(i));
    }
    for (int n = 0; n < s.N; ++n) targets[n] = (n * 7919) % s.V;
  }
  void run(bool with_loss) {
    for (int r0 = 0; r0 < s.N; r0 += s.head_rows) {
      const int R = std::min(s.head_rows, s.N - r0);
      const float* xr = x.data() + std::size_t(r0) * s.C;
      kernels::matmul_forward(chunk.data(), xr, weight.data(), R, s.C, s.V);
      if (with_loss) {
        int64_t predicted = 0;
        benchmark::DoNotOptimize(kernels::softmax_xent_forward(chunk.data(), targets.data() + r0, R,
                                                               s.V, 1.0 / s.N, &predicted));
      }
      kernels::matmul_backward(dx.data() + std::size_t(r0) * s.C, dweight.data(), chunk.data(), xr,
                               weight.data(), R, s.C, s.V);
    }
  }
  double flops() const { return 6.0 * s.N * s.C * static_cast<double>(s.V); }
};

// of_sgemm pairs each repetition with one pass of the GEMMs alone just before
// it, after one more (first touch, --gemm auto's choices) left out.
void BM_FusedHead(benchmark::State& state) {
  HeadOperands h;
  h.run(false);
  const auto start = std::chrono::steady_clock::now();
  h.run(false);
  const double gemms =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double seconds = timed_calls(state, [&](int64_t) { h.run(true); });
  state.counters["GFLOP/s"] =
      benchmark::Counter(h.flops() / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["of_sgemm"] = gemms / (seconds / static_cast<double>(state.iterations()));
}

void BM_HeadGemmsOnly(benchmark::State& state) {
  HeadOperands h;
  for (auto _ : state) h.run(false);
  state.counters["GFLOP/s"] =
      benchmark::Counter(h.flops() / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// ---- attention ------------------------------------------------------------------
// Causal, so per (batch, head) each of the T(T+1)/2 (query, key) pairs takes
// a dot of hd in S = q k^T and another in P v: 2 hd T(T+1) FLOPs forward;
// backward's dV, dP, dQ, dK make it twice that. The scores backward makes
// again from the saved log-sum-exp, and the masked corners of the 64-row
// tiles' GEMMs (about 12% more at T = 511), are work done but not counted.
double attention_flops(const Shapes& s, bool backward) {
  const double forward = 2.0 * s.B * s.NH * s.hd * double(s.T) * (s.T + 1);
  return backward ? 2 * forward : forward;
}

struct AttentionOperands {
  const Shapes& s = shapes();
  Buffer<float> qkv{std::size_t(s.N) * s.W, MemoryCategory::kActivations};
  Buffer<float> out{std::size_t(s.N) * s.Q, MemoryCategory::kActivations};
  Buffer<float> lse{std::size_t(s.B) * s.NH * s.T, MemoryCategory::kActivations};
  Buffer<float> workspace{kernels::attention_workspace_size(s.T, omp_get_max_threads()),
                          MemoryCategory::kWorkspace};
  AttentionOperands() {
    // Scores of a few units, as trained q and k give: exp neither saturates
    // nor underflows everywhere.
    for (std::size_t i = 0; i < qkv.size(); ++i) qkv[i] = std::sin(0.7f * static_cast<float>(i));
  }
  void forward() {
    kernels::attention_forward(out.data(), lse.data(), workspace.data(), qkv.data(),
                               qkv.data() + s.Q, qkv.data() + s.Q + s.KV, s.B, s.T, s.NH, s.NKV,
                               s.hd, s.W);
  }
};

// q, k, v [B, T, NH, hd] (strided in qkv [N, W]) -> out [N, Q], lse [B, NH, T].
void BM_AttentionForward(benchmark::State& state) {
  AttentionOperands a;
  for (auto _ : state) a.forward();
  state.counters["GFLOP/s"] = benchmark::Counter(attention_flops(a.s, false) / 1e9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

// dout [N, Q], lse, q, k, v -> dq, dk, dv += (strided in dqkv [N, W]).
void BM_AttentionBackward(benchmark::State& state) {
  AttentionOperands a;
  a.forward();  // the lse backward reads
  const Shapes& s = a.s;
  Buffer<float> dqkv(std::size_t(s.N) * s.W, MemoryCategory::kGradients);
  Buffer<float> dout(std::size_t(s.N) * s.Q, MemoryCategory::kActivations);
  for (std::size_t i = 0; i < dout.size(); ++i) dout[i] = std::cos(0.3f * static_cast<float>(i));
  for (auto _ : state) {
    kernels::attention_backward(dqkv.data(), dqkv.data() + s.Q, dqkv.data() + s.Q + s.KV,
                                a.workspace.data(), dout.data(), a.lse.data(), a.qkv.data(),
                                a.qkv.data() + s.Q, a.qkv.data() + s.Q + s.KV, s.B, s.T, s.NH,
                                s.NKV, s.hd, s.W);
  }
  state.counters["GFLOP/s"] = benchmark::Counter(attention_flops(s, true) / 1e9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

// Wall time throughout: with OMP_NUM_THREADS > 1 the kernels' other threads
// are not on the main thread's CPU clock.
void milliseconds(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
void cold_and_warm(benchmark::internal::Benchmark* b) {
  b->ArgName("cold")->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond)->UseRealTime();
}
// And each as the model runs it fused and as separate kernels.
void cold_and_warm_fused(benchmark::internal::Benchmark* b) {
  b->ArgNames({"cold", "fused"})->ArgsProduct({{1, 0}, {1, 0}});
  b->Unit(benchmark::kMicrosecond)->UseRealTime();
}

// The kernels whose float code is dispatched (kernels/simd.h): each runs at
// every level, adjacent rows per kernel.
struct LevelledBench {
  const char* name;
  void (*run)(benchmark::State&);
  void (*apply)(benchmark::internal::Benchmark*);
};
constexpr LevelledBench kLevelled[] = {
    {"BM_AdamwClipped", BM_AdamwClipped, milliseconds},
    {"BM_GlobalNorm", BM_GlobalNorm, milliseconds},
    {"BM_RmsnormForward", BM_RmsnormForward, cold_and_warm},
    {"BM_ResidualAddRmsnorm", BM_ResidualAddRmsnorm, cold_and_warm_fused},
    {"BM_RmsnormBackward", BM_RmsnormBackward, cold_and_warm},
    {"BM_SwigluForward", BM_SwigluForward, cold_and_warm},
    {"BM_SwigluBackward", BM_SwigluBackward, cold_and_warm},
    {"BM_RopeForward", BM_RopeForward, cold_and_warm_fused},
    {"BM_RopeBackward", BM_RopeBackward, cold_and_warm_fused},
    {"BM_SoftmaxXent", BM_SoftmaxXent, cold_and_warm},
    {"BM_AttentionForward", BM_AttentionForward, milliseconds},
    {"BM_AttentionBackward", BM_AttentionBackward, milliseconds},
    {"BM_FusedHead", BM_FusedHead, milliseconds},
};

void register_benchmarks() {
  std::vector<kernels::SimdLevel> levels = kernels::simd_levels();
  levels.push_back(kernels::kReferenceLevel);
  for (const LevelledBench& b : kLevelled) {
    for (const kernels::SimdLevel& level : levels) {
      const std::string name = fmt::format("{}/simd:{}", b.name, level.name());
      benchmark::RegisterBenchmark(name.c_str(), [b, level](benchmark::State& state) {
        const kernels::ScopedSimdLevel scope(level);
        b.run(state);
      })->Apply(b.apply);
    }
  }
  benchmark::RegisterBenchmark("BM_HeadGemmsOnly", BM_HeadGemmsOnly)->Apply(milliseconds);
}

}  // namespace

int main(int argc, char** argv) {
  // OpenBLAS's best core for this CPU, as trainscope's own main picks it
  // (kernels/blas_core.h; the context block says which and how).
  kernels::choose_blas_core(argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // One thread unless asked: a kernel's own speed, not how it scales.
  const bool threads_from_env = std::getenv("OMP_NUM_THREADS") != nullptr;
  // Attention's GEMMs: with one OpenMP thread there is no parallel region to
  // keep OpenBLAS single-threaded, so it is told too.
  const int threads = threads_from_env ? omp_get_max_threads() : 1;
  kernels::set_compute_threads(threads);
  // Attention's tiles on the library the trainer's default (--gemm auto) picks.
  kernels::set_gemm_backend(options::GemmBackend::kAuto);

  const profiler::CopyProbeOptions probe{
      .bytes = int64_t{256} << 20, .reps = 5, .threads = threads};
  const double copied_gbps = profiler::copy_gbps(probe.bytes, profiler::time_copies(probe));
  g_memcpy_bps = 2 * copied_gbps * 1e9;
  Buffer<float> pool(kPoolFloats, MemoryCategory::kWorkspace);
  g_pool = pool.data();

  const Shapes& s = shapes();
  benchmark::AddCustomContext(
      "threads",
      fmt::format("{} ({})", threads,
                  threads_from_env ? "OMP_NUM_THREADS" : "the default; OMP_NUM_THREADS"));
  benchmark::AddCustomContext(
      "memcpy", fmt::format("{:.2f} GB/s moved ({:.2f} GiB/s, bytes_per_second's unit) = 2 x "
                            "{:.2f} GB/s copied (256 MiB, median of {}, {} threads): of_memcpy's "
                            "denominator",
                            2 * copied_gbps, 2 * copied_gbps * 1e9 / (1 << 30), copied_gbps,
                            probe.reps, threads));
  bench::add_kernels_context();
  benchmark::AddCustomContext(
      "shapes",
      fmt::format("seed: B {} x T {} = N {} rows, C {}, NH {}, hd {}, F {}, V {} (head chunks of "
                  "{} rows); {} parameters",
                  s.B, s.T, s.N, s.C, s.NH, s.hd, s.F, s.V, s.head_rows, s.params));
  register_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
