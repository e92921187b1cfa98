// oneDNN's matmul primitive as the kernels use it (internal to kernels/):
// dst[M, N] (+)= alpha a[M, K] @ b[K, N], each operand row-major or stored
// transposed, its rows possibly longer than its columns (a block of a wider
// matrix: q inside the fused qkv rows), the inputs fp32 or bf16 and the sums
// and dst fp32. One primitive per shape, made on first use and kept (making
// one costs far more than a call); each thread's calls share one scratchpad
// of ours (category workspace), grown to the largest need, instead of
// oneDNN's malloc per call.
//
// Thread-safety: callable from several threads at once (attention calls it
// from its per-head OpenMP loop): the shared primitive cache is locked the
// first time a thread meets a shape; each thread has its own stream and
// scratchpad.
#ifndef TRAINSCOPE_KERNELS_ONEDNN_MATMUL_H_
#define TRAINSCOPE_KERNELS_ONEDNN_MATMUL_H_

#include <compare>
#include <cstdint>
#include <string>

namespace trainscope::kernels::internal {

struct OnednnShape {
  int64_t M, N, K;
  bool a_transposed, b_transposed, accumulate;
  int64_t ld_b = 0, ld_dst = 0;  // 0: dense
  bool bf16 = false;             // inputs bf16 bit patterns, else fp32
  int64_t ld_a = 0;              // 0: dense
  float alpha = 1;               // scales the product (not the accumulated dst)
  auto operator<=>(const OnednnShape&) const = default;
};

// Runs the shape's primitive; a and b are float or uint16_t (bf16) as the
// shape says. Throws dnnl::error when oneDNN has no such primitive here.
void onednn_matmul(const OnednnShape& shape, float* dst, const void* a, const void* b);

// "oneDNN 2.6.3, CPU ISA avx512_core_amx".
std::string onednn_version_and_isa();

}  // namespace trainscope::kernels::internal

#endif  // TRAINSCOPE_KERNELS_ONEDNN_MATMUL_H_
