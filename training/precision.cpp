#include "training/precision.h"

#include <fmt/format.h>

#include "base/check.h"

namespace trainscope::training {

std::string_view precision_name(Precision p) { return p == Precision::kBf16 ? "bf16" : "fp32"; }

Precision parse_precision(std::string_view text, std::string_view flag) {
  for (Precision p : {Precision::kFp32, Precision::kBf16}) {
    if (text == precision_name(p)) return p;
  }
  throw Error(fmt::format("{} must be fp32 or bf16, got '{}'", flag, text));
}

void check_precision_supported(Precision p, const kernels::CpuIsa& isa) {
  if (p != Precision::kBf16) return;
  if (const std::string missing = kernels::bf16_instructions_missing(isa); !missing.empty()) {
    throw Error(
        fmt::format("--precision bf16: {}; oneDNN would emulate them, slower than fp32. "
                    "Use --precision fp32",
                    missing));
  }
}

}  // namespace trainscope::training
