// oneDNN's matmul primitive as the kernels use it (internal to kernels/):
// dst[M, N] (+)= a[M, K] @ b[K, N], each operand row-major or stored
// transposed, b's and dst's rows possibly longer than N (a column chunk of a
// wider matrix), the inputs fp32 or bf16 and the sums and dst fp32. One
// primitive per shape, made on first use and kept (making one costs far more
// than a call); every primitive shares one scratchpad of ours (category
// workspace), grown to the largest need, instead of oneDNN's malloc per call.
//
// Thread-safety: one thread at a time (the primitive cache is not locked).
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
  auto operator<=>(const OnednnShape&) const = default;
};

// Runs the shape's primitive; a and b are float or uint16_t (bf16) as the
// shape says. Throws dnnl::error when oneDNN has no such primitive here.
void onednn_matmul(const OnednnShape& shape, float* dst, const void* a, const void* b);

// "oneDNN 2.6.3, CPU ISA avx512_core_amx".
std::string onednn_version_and_isa();

}  // namespace trainscope::kernels::internal

#endif  // TRAINSCOPE_KERNELS_ONEDNN_MATMUL_H_
