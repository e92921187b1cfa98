// What a test that needs an instruction set asks before it runs, and the
// bf16 GEMM paths such a test can take on any CPU.
//
// The probes are the ones every run asks (kernels/cpu_isa.h's
// bf16_instructions_missing, behind --precision bf16's refusal and doctor,
// and kernels::onednn_bf16_unavailable),
// so a test skips exactly where a run would refuse, and says why.
// scripts/check-cpu-matrix.sh caps that probe (and oneDNN) to show that the
// suite passes at each weaker level.
#ifndef TRAINSCOPE_TESTS_CPU_PATHS_H_
#define TRAINSCOPE_TESTS_CPU_PATHS_H_

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "kernels/cpu_isa.h"
#include "kernels/matmul_bf16.h"

namespace trainscope::testing {

// One way to run the bf16 GEMMs: oneDNN or the emulation, wide GEMMs whole or
// in column chunks.
struct Bf16Path {
  kernels::Bf16GemmOptions options;
  const char* name;  // a gtest parameter name
};

inline std::vector<Bf16Path> bf16_paths() {
  using kernels::Bf16Columns, kernels::Bf16Gemm;
  return {{{Bf16Gemm::kOneDnn, Bf16Columns::kWhole}, "OneDnnWhole"},
          {{Bf16Gemm::kOneDnn, Bf16Columns::kChunked}, "OneDnnChunked"},
          {{Bf16Gemm::kEmulated, Bf16Columns::kWhole}, "EmulatedWhole"},
          {{Bf16Gemm::kEmulated, Bf16Columns::kChunked}, "EmulatedChunked"}};
}
// ctest's test names show the path's name, not its bytes.
inline void PrintTo(const Bf16Path& path, std::ostream* os) { *os << path.name; }
inline std::string bf16_path_name(const ::testing::TestParamInfo<Bf16Path>& info) {
  return info.param.name;
}

// Sets the bf16 GEMM path for one test's scope and puts the default back.
class ScopedBf16Path {
 public:
  explicit ScopedBf16Path(const kernels::Bf16GemmOptions& o) { kernels::set_bf16_gemm_options(o); }
  ~ScopedBf16Path() { kernels::set_bf16_gemm_options({}); }
  ScopedBf16Path(const ScopedBf16Path&) = delete;
  ScopedBf16Path& operator=(const ScopedBf16Path&) = delete;
};

// Empty when `path` runs on this CPU; else why not.
inline std::string bf16_path_unavailable(const kernels::Bf16GemmOptions& path) {
  if (path.gemm == kernels::Bf16Gemm::kEmulated) return {};
  return kernels::onednn_bf16_unavailable();
}

}  // namespace trainscope::testing

// In a test body: skip, with the reason, where `path` cannot run here.
#define TRAINSCOPE_SKIP_UNLESS_BF16_PATH_RUNS(path)                                             \
  if (const std::string why = ::trainscope::testing::bf16_path_unavailable(path); !why.empty()) \
  GTEST_SKIP() << "skipped: " << why

// In a test body: skip, with the reason, where --precision bf16 is refused.
#define TRAINSCOPE_SKIP_WITHOUT_BF16_INSTRUCTIONS()                             \
  if (const std::string why = ::trainscope::kernels::bf16_instructions_missing( \
          ::trainscope::kernels::detect_cpu_isa());                             \
      !why.empty())                                                             \
  GTEST_SKIP() << "skipped: " << why

#endif  // TRAINSCOPE_TESTS_CPU_PATHS_H_
