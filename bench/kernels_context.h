// The context block's lines that say what a timing ran on: the level of the
// element-wise kernels' vector code (kernels/simd.h) and the GEMMs' kernels
// (OpenBLAS's core, oneDNN's ISA), which follow TRAINSCOPE_MAX_CPU_ISA,
// OPENBLAS_CORETYPE and DNNL_MAX_CPU_ISA.
#ifndef TRAINSCOPE_BENCH_KERNELS_CONTEXT_H_
#define TRAINSCOPE_BENCH_KERNELS_CONTEXT_H_

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "kernels/blas_core.h"
#include "kernels/matmul_bf16.h"
#include "kernels/simd.h"

namespace trainscope::bench {

inline void add_kernels_context() {
  benchmark::AddCustomContext("simd", kernels::simd_summary());
  const kernels::BlasInfo blas = kernels::blas_info();
  benchmark::AddCustomContext(
      "gemm kernels",
      fmt::format("{} {} ({}), oneDNN: {}", blas.library, blas.core,
                  kernels::blas_choice_name(blas.choice), kernels::onednn_description()));
}

}  // namespace trainscope::bench

#endif  // TRAINSCOPE_BENCH_KERNELS_CONTEXT_H_
