// Linear layers with bf16 inputs and fp32 accumulation, through oneDNN's
// matmul primitive (AVX512-BF16 on Zen 4/5 and Cooper Lake, AMX on Sapphire
// Rapids; oneDNN emulates bf16 on plain AVX-512, slower than fp32, which is
// why --precision bf16 refuses such CPUs: training/precision.h).
//
// The GEMMs of --precision bf16: the caller converts weights (once per step)
// and activations to bf16 (round to nearest even) with to_bf16; products are
// summed in fp32 and written or accumulated to fp32. Same shapes and
// conventions as kernels/matmul.h (row-major, weight [OC, C], *_backward
// ACCUMULATES into its outputs). Primitives are created once per shape and
// kept. Deterministic for a given shape and OpenMP thread count (oneDNN's
// static partitioning).
//
// GEMMs with more than kBf16ColumnChunk output columns (the LM head) may run
// as column chunks where that is faster (matmul_bf16.cpp says where); the
// weight gradient then needs a chunk of scratch, C x kBf16ColumnChunk floats.
//
// Tests choose the implementation (Bf16GemmOptions): oneDNN, which every
// run uses, or an emulation on OpenBLAS that needs no bf16 instructions, so
// that this file's logic and the model's bf16 path are tested on every CPU.
//
// Thread-safety: one thread at a time (the primitive cache is not locked).
#ifndef TRAINSCOPE_KERNELS_MATMUL_BF16_H_
#define TRAINSCOPE_KERNELS_MATMUL_BF16_H_

#include <cstdint>
#include <string>

namespace trainscope::kernels {

inline constexpr int64_t kBf16ColumnChunk = 4096;

// out[N, OC] = inp[N, C] @ weight[OC, C]^T; inp and weight are bf16 bit
// patterns (kernels/float16.h), out is float.
void matmul_forward_bf16(float* out, const uint16_t* inp, const uint16_t* weight, int N, int C,
                         int OC);
// dinp[N, C] += dout[N, OC] @ weight[OC, C];  dweight[OC, C] += dout^T @ inp.
// Either of dinp / dweight may be null to skip it.
void matmul_backward_bf16(float* dinp, float* dweight, const uint16_t* dout, const uint16_t* inp,
                          const uint16_t* weight, int N, int C, int OC);
// What runs the bf16 GEMMs. kOneDnn in every run. kEmulated widens the bf16
// operands to fp32 and calls OpenBLAS's sgemm: products of bf16 numbers are
// exact in fp32, so it computes the same sums in another order, on any CPU,
// slowly; only tests choose it (oneDNN has no bf16 matmul below AVX-512).
enum class Bf16Gemm { kOneDnn, kEmulated };
// Whether a GEMM wider than kBf16ColumnChunk runs in column chunks: kAuto as
// measured per CPU (matmul_bf16.cpp), or forced either way by tests.
enum class Bf16Columns { kAuto, kWhole, kChunked };
struct Bf16GemmOptions {
  Bf16Gemm gemm = Bf16Gemm::kOneDnn;
  Bf16Columns columns = Bf16Columns::kAuto;
};
// Process-wide; tests set it (tests/bf16_paths.h), runs never do.
void set_bf16_gemm_options(const Bf16GemmOptions& options);
Bf16GemmOptions bf16_gemm_options();

// Empty when oneDNN can run a bf16 matmul on this CPU (honouring
// DNNL_MAX_CPU_ISA); else why not, e.g. "oneDNN 2.6.3 has no bf16 matmul at
// CPU ISA avx2". Tried once, with a tiny primitive.
std::string onednn_bf16_unavailable();

// dst[i] = bf16(src[i]) for n elements.
void to_bf16(uint16_t* dst, const float* src, int64_t n);
// oneDNN's version and the ISA it dispatches to, for records ("oneDNN 2.6.3,
// CPU ISA avx512_core_bf16"); under Bf16Gemm::kEmulated, says so instead.
std::string onednn_description();

}  // namespace trainscope::kernels

#endif  // TRAINSCOPE_KERNELS_MATMUL_BF16_H_
