// fp32 sgemm (OpenBLAS) against bf16-input, fp32-accumulating GEMMs
// (oneDNN) at the `seed` model's training shapes: the speed-up
// --precision bf16 can hope for in its GEMMs (issue 15). Runs with the
// OpenBLAS core and threads in effect (OPENBLAS_CORETYPE is left alone).
//
//   build/bench/gemm_bench --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <vector>

#include "kernels/matmul.h"
#include "kernels/matmul_bf16.h"

namespace {
using namespace trainscope::kernels;

// Rows N = batch 4 x 128 tokens; (C, OC) of seed's q/k/v, gate/up, down, o and head.
void shapes(benchmark::internal::Benchmark* b) {
  for (auto [C, OC] : std::vector<std::pair<int, int>>{
           {256, 768}, {256, 1024}, {512, 256}, {256, 256}, {256, 50257}}) {
    b->Args({512, C, OC});
  }
}

void report(benchmark::State& state, int N, int C, int OC) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * N * C * OC * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_Fp32(benchmark::State& state) {
  const int N = state.range(0), C = state.range(1), OC = state.range(2);
  std::vector<float> x(size_t(N) * C, 0.01f), w(size_t(OC) * C, 0.02f), y(size_t(N) * OC);
  for (auto _ : state) matmul_forward(y.data(), x.data(), w.data(), N, C, OC);
  report(state, N, C, OC);
}

void BM_Bf16(benchmark::State& state) {
  const int N = state.range(0), C = state.range(1), OC = state.range(2);
  std::vector<float> x(size_t(N) * C, 0.01f), w(size_t(OC) * C, 0.02f), y(size_t(N) * OC);
  std::vector<uint16_t> xb(x.size()), wb(w.size());
  to_bf16(wb.data(), w.data(), static_cast<int64_t>(w.size()));  // once per step in training
  for (auto _ : state) {
    to_bf16(xb.data(), x.data(), static_cast<int64_t>(x.size()));  // every call: activations
    matmul_forward_bf16(y.data(), xb.data(), wb.data(), N, C, OC);
  }
  report(state, N, C, OC);
  state.SetLabel(onednn_description());
}

BENCHMARK(BM_Fp32)->Apply(shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Bf16)->Apply(shapes)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
