// The precision a model's GEMMs run in (--precision).
//
// kFp32: everything fp32 through OpenBLAS. kBf16: mixed precision as in
// PyTorch's CPU autocast: fp32 master weights, gradients and optimizer state;
// the linear layers' inputs (weights, copied once per step, and activations)
// rounded to bf16 and multiplied with fp32 sums through oneDNN
// (kernels/matmul_bf16.h); every other kernel (norms, RoPE, attention,
// SwiGLU, softmax, LoRA adapters) stays fp32.
#ifndef TRAINSCOPE_TRAINING_PRECISION_H_
#define TRAINSCOPE_TRAINING_PRECISION_H_

#include <string>
#include <string_view>

#include "kernels/blas_core.h"
#include "options/choices.h"

namespace trainscope::training {

using options::Precision;  // its names: options/choices.h

// Throws trainscope::Error (naming --precision and the CPU's ISA) when bf16
// is asked of a CPU without bf16 instructions (AVX512-BF16 or AMX-BF16):
// oneDNN would emulate them, slower than fp32, so no run silently measures that.
void check_precision_supported(Precision p, const kernels::CpuIsa& isa);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_PRECISION_H_
