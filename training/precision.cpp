#include "training/precision.h"

#include <fmt/format.h>

#include "kernels/check.h"

namespace trainscope::training {

std::string_view precision_name(Precision p) { return p == Precision::kBf16 ? "bf16" : "fp32"; }

Precision parse_precision(std::string_view text, std::string_view flag) {
  for (Precision p : {Precision::kFp32, Precision::kBf16}) {
    if (text == precision_name(p)) return p;
  }
  throw Error(fmt::format("{} must be fp32 or bf16, got '{}'", flag, text));
}

void check_precision_supported(Precision p, const kernels::CpuIsa& isa) {
  if (p != Precision::kBf16 || isa.avx512_bf16 || isa.amx_bf16) return;
  throw Error(fmt::format("--precision bf16: this CPU ({}) has no bf16 instructions (AVX512-BF16 "
                          "or AMX-BF16); oneDNN would emulate them, slower than fp32. Use "
                          "--precision fp32",
                          isa.summary()));
}

}  // namespace trainscope::training
