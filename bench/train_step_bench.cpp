// One full training step (forward, backward, AdamW) of a preset, and the same
// step's GEMMs alone, each on the faster library for its shape (--gemm auto:
// OpenBLAS or oneDNN, kernels/gemm_backend.h), so the model's FLOP/s can be
// read against what the best GEMM reaches at exactly the model's shapes in
// the same run. Issue 26's target P2: BM_TrainStep's time at most 1.15x
// BM_StepGemmsOnly's.
//
//   build/bench/train_step_bench                         # seed, 1 and 2 threads
//   build/bench/train_step_bench --benchmark_filter=seed/threads:1
//   build/bench/train_step_bench --benchmark_filter='seed/simd:AVX2'
//
// Levels (issue 35): the seed step runs at every level of the element-wise
// kernels' vector code this CPU runs (simd:AVX3, simd:AVX2, ...,
// kernels/simd.h) and on their reference templates (simd:reference). The
// GEMMs follow OpenBLAS's core and oneDNN's ISA, which a process picks once:
// the step and its GEMMs at AVX2 on an AVX-512 machine are
//   export TRAINSCOPE_MAX_CPU_ISA=avx2 DNNL_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell
//   build/bench/train_step_bench --benchmark_filter=seed
// (the context block names the kernels in use).
//
// BM_StepOverGemms pairs the two inside one process (step_over_gemms, the
// median of 7 neighbouring pairs' ratios): the target's figure.
//
// Counters: tokens_per_s and GFLOP_per_s (model FLOPs: 6 x non-embedding
// parameters per token + attention, the PaLM accounting). Run on a quiet
// machine; compare ratios from the same run.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "bench/kernels_context.h"
#include "kernels/adamw.h"
#include "kernels/gemm_backend.h"
#include "kernels/simd.h"
#include "kernels/storage.h"
#include "kernels/thread_count.h"
#include "profiler/memory_tracker.h"
#include "profiler/step_timer.h"
#include "training/llama_model.h"

namespace {
using namespace trainscope;

struct StepFixture {
  training::ModelConfig config;
  int B, T;
  training::LlamaModel<float> model;
  std::vector<int32_t> inputs, targets;
  kernels::Buffer<float> m, v;
  StepFixture(const std::string& preset, int batch, int block)
      : config(training::model_preset(preset)),
        B(batch),
        T(block - 1),
        model(config, B, T),
        inputs(B * T),
        targets(B * T),
        m(model.params().size(), kernels::MemoryCategory::kOptimizerState),
        v(model.params().size(), kernels::MemoryCategory::kOptimizerState) {
    model.init_weights(1);
    std::mt19937 rng(2);
    for (auto& t : inputs) t = static_cast<int32_t>(rng() % 50257 % config.vocab_size);
    for (auto& t : targets) t = static_cast<int32_t>(rng() % 50257 % config.vocab_size);
  }
  void step(int64_t t) {
    model.zero_grad();
    model.forward(inputs.data(), targets.data(), 1.0 / (B * T));
    model.backward(inputs.data());
    kernels::AdamWParams hp;
    kernels::adamw_update(model.params().data(), model.grads().data(), m.data(), v.data(), m.size(),
                          hp, t);
  }
};

void BM_TrainStep(benchmark::State& state, const std::string& preset) {
  const int threads = static_cast<int>(state.range(0));
  kernels::set_compute_threads(threads);
  kernels::set_gemm_backend(options::GemmBackend::kAuto);  // the trainer's default
  StepFixture f(preset, 4, training::model_preset(preset).default_block);
  f.step(1);  // first touch and caches, outside the timing
  int64_t t = 2;
  for (auto _ : state) f.step(t++);
  const double tokens = static_cast<double>(f.B) * f.T;
  const double flops = training::LlamaModel<float>::train_flops(f.config, f.B, f.T);
  state.counters["tokens_per_s"] =
      benchmark::Counter(tokens, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP_per_s"] =
      benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// The step's projection GEMMs (q/k/v, o, gate/up, down, lm_head; forward and
// both backward products), same shapes and count, nothing else, each on the
// library --gemm auto picks for it (the LM head whole, where the step runs it
// in chunks that never hold all the logits): the GEMM ceiling. Attention's
// small per-head GEMMs are not in it, while the step's GFLOP_per_s counts
// them (about 6% of a `seed` step's FLOPs), so the ratio of the two slightly
// flatters the step.
struct GemmPass {
  struct Shape {
    int M, N, K;
    bool ta, tb;
  };
  std::vector<std::pair<kernels::GemmKey, options::GemmBackend>> calls;
  std::vector<float> a, b, out;
  double flops = 0;

  explicit GemmPass(const std::string& preset) {
    const training::ModelConfig c = training::model_preset(preset);
    const int B = 4, T = c.default_block - 1, N = B * T, C = c.dim, F = c.mlp_dim, V = c.vocab_size;
    std::vector<Shape> shapes;
    auto linear = [&](int in, int out) {
      shapes.push_back({N, out, in, false, true});   // forward
      shapes.push_back({N, in, out, false, false});  // dinput
      shapes.push_back({out, in, N, true, false});   // dweight
    };
    for (int l = 0; l < c.n_layers; ++l) {
      linear(C, 3 * C);
      linear(C, C);
      linear(C, 2 * F);
      linear(F, C);
    }
    linear(C, V);
    std::size_t max_elems = 0;
    for (const auto& s : shapes) {
      max_elems = std::max(
          {max_elems, std::size_t(s.M) * s.K, std::size_t(s.K) * s.N, std::size_t(s.M) * s.N});
    }
    a.assign(max_elems, 0.01f);
    b.assign(max_elems, 0.02f);
    out.resize(max_elems);
    for (const auto& s : shapes) flops += 2.0 * s.M * s.N * s.K;
    kernels::set_gemm_backend(options::GemmBackend::kAuto);
    for (const auto& s : shapes) {
      // Backward's products accumulate into the gradients, as in the step.
      const kernels::GemmKey key{s.M, s.N, s.K, s.ta, s.tb, /*accumulate=*/s.ta || !s.tb};
      calls.emplace_back(key, kernels::backend_for(key));  // timed here once if not cached
    }
  }
  void run() {
    for (const auto& [key, backend] : calls) {
      kernels::gemm_f32(backend, key, out.data(), a.data(), b.data());
    }
  }
};

void BM_StepGemmsOnly(benchmark::State& state, const std::string& preset) {
  kernels::set_compute_threads(static_cast<int>(state.range(0)));
  GemmPass pass(preset);
  for (auto _ : state) pass.run();
  state.counters["GFLOP_per_s"] =
      benchmark::Counter(pass.flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// The step against its GEMMs paired inside one process: each iteration a
// GEMMs-only pass, then a step, each timed; step_over_gemms is the median
// of the iterations' ratios. Between processes the GEMMs-only row moved by
// 8% (685-740 ms, native, 2 threads) where the step moved 3%, so two rows
// of separate runs give a noisy ratio; a pair of neighbours shares the
// machine's state. The time is the pair's.
void BM_StepOverGemms(benchmark::State& state, const std::string& preset) {
  kernels::set_compute_threads(static_cast<int>(state.range(0)));
  kernels::set_gemm_backend(options::GemmBackend::kAuto);
  StepFixture f(preset, 4, training::model_preset(preset).default_block);
  GemmPass pass(preset);
  f.step(1);  // first touch and caches, outside the timing
  pass.run();
  int64_t t = 2;
  std::vector<double> ratios;
  using Clock = std::chrono::steady_clock;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    pass.run();
    const auto t1 = Clock::now();
    f.step(t++);
    const auto t2 = Clock::now();
    ratios.push_back(std::chrono::duration<double>(t2 - t1).count() /
                     std::chrono::duration<double>(t1 - t0).count());
  }
  std::sort(ratios.begin(), ratios.end());
  state.counters["step_over_gemms"] = ratios.empty() ? 0 : ratios[ratios.size() / 2];
}

// What the trainer adds per step for memory tracking and phase timing
// (reset_peak, a by-category snapshot, seven phase scopes, the /proc view):
// compare with BM_TrainStep's time for the overhead fraction.
void BM_PerStepInstrumentation(benchmark::State& state) {
  profiler::StepTimer timer;
  int64_t step = 0;
  for (auto _ : state) {
    kernels::reset_peak_memory();
    timer.begin_step(step++);
    for (int p = 0; p < profiler::kNumPhases; ++p) {
      auto scope = timer.phase(static_cast<profiler::Phase>(p));
    }
    timer.end_step();
    benchmark::DoNotOptimize(kernels::memory_snapshot());
    if (state.range(0) != 0) benchmark::DoNotOptimize(profiler::self_process_memory(false));
    if (step % 4096 == 0) timer.clear();
  }
}

// 3 repetitions of 3 steps at 1 and 2 threads, medians.
void seed_rows(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
  b->Iterations(3)->Repetitions(3)->ReportAggregatesOnly(true);
}

BENCHMARK_CAPTURE(BM_StepGemmsOnly, seed, std::string("seed"))->Apply(seed_rows);
BENCHMARK_CAPTURE(BM_StepOverGemms, seed, std::string("seed"))
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(7);
BENCHMARK_CAPTURE(BM_TrainStep, small, std::string("small"))
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_PerStepInstrumentation)->ArgName("proc")->Arg(0)->Arg(1);

// The seed step at each level of the element-wise kernels, then on their
// reference templates.
void register_levels() {
  std::vector<kernels::SimdLevel> levels = kernels::simd_levels();
  levels.push_back(kernels::kReferenceLevel);
  for (const kernels::SimdLevel& level : levels) {
    const std::string name = fmt::format("BM_TrainStep/seed/simd:{}", level.name());
    benchmark::RegisterBenchmark(name.c_str(), [level](benchmark::State& state) {
      const kernels::ScopedSimdLevel scope(level);
      BM_TrainStep(state, "seed");
    })->Apply(seed_rows);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // OpenBLAS's best core for this CPU, as trainscope's own main picks it
  // (kernels/blas_core.h; the context block says which and how).
  kernels::choose_blas_core(argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  bench::add_kernels_context();
  register_levels();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
