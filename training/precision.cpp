#include "training/precision.h"

#include <fmt/format.h>

#include "base/check.h"

namespace trainscope::training {

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
