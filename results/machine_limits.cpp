#include "results/machine_limits.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace trainscope::results {

std::string_view limit_unit(LimitKind kind) {
  return kind == LimitKind::kSgemm ? "GFLOP/s" : "GB/s";
}

std::string describe_key(const MachineLimit& l) {
  const std::string threads = fmt::format("{} thread{}", l.threads, l.threads == 1 ? "" : "s");
  switch (l.kind) {
    case LimitKind::kSgemm:
      // --gemm auto, the default, goes unsaid.
      return fmt::format("{}, {}, {} rows, {}{}{}", l.precision == "bf16" ? "bf16 GEMM" : "sgemm",
                         l.model, l.rows, threads,
                         l.gemm.empty() || l.gemm == "auto" ? "" : ", --gemm " + l.gemm,
                         l.ranks > 1 ? fmt::format(", {} at once", l.ranks) : "");
    case LimitKind::kMemcpy: return fmt::format("memcpy, {}", threads);
    case LimitKind::kAllReduce: {
      // tcp cases record their link count as their transport.
      const bool links =
          !l.transport.empty() && std::all_of(l.transport.begin(), l.transport.end(),
                                              [](unsigned char ch) { return std::isdigit(ch); });
      return fmt::format("all-reduce busbw, {}, {} ranks",
                         links ? fmt::format("tcp x{} links", l.transport) : l.transport, l.ranks);
    }
  }
  return "?";
}

}  // namespace trainscope::results
