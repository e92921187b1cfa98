// The level the element-wise float kernels run at: their vector code is
// written once on Google Highway (kernels/simd_kernels.h) and compiled for
// several instruction sets, and the strongest one this CPU runs is chosen
// at run time (Highway's dynamic dispatch): one binary runs at its best on
// AVX2, AVX-512 and later CPUs, whatever -march built the rest.
//
// Levels are Highway's target names: "AVX3" (AVX-512 F/BW/DQ/VL), "AVX2"
// (with FMA), "SSE4", and the portable fallback ("SCALAR" or "EMU128").
// TRAINSCOPE_MAX_CPU_ISA caps them with the rest of the project
// (kernels/cpu_isa.h): at avx2 the kernels run their AVX2 code, compiled
// for AVX2, on any CPU that has it. "reference" is not a Highway target but
// the kernels' portable C++ templates (the double instantiations' code),
// compiled as the rest of the project is: what the float kernels were
// before they had vector code of their own, kept so that tests and
// benchmarks can hold the vector code against it.
//
// Thread-safety: simd_level() and the kernels may be called from any
// thread; ScopedSimdLevel only from the compute thread, outside parallel
// regions.
#ifndef TRAINSCOPE_KERNELS_SIMD_H_
#define TRAINSCOPE_KERNELS_SIMD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainscope::kernels {

struct SimdLevel {
  int64_t target = 0;        // Highway's target bit (HWY_AVX2, ...); 0: the reference
  std::string name() const;  // "AVX3", "AVX2", ...; "reference"
  bool operator==(const SimdLevel&) const = default;
};

inline constexpr SimdLevel kReferenceLevel{};

// The levels compiled into this binary that this CPU runs, within
// TRAINSCOPE_MAX_CPU_ISA's cap, strongest first: what dispatch chooses from.
std::vector<SimdLevel> simd_levels();
// The level the kernels run at now: simd_levels().front() unless a
// ScopedSimdLevel says otherwise.
SimdLevel simd_level();
// One line for doctor and the run records: the level in use, why, and what
// else exists: "AVX3 (Highway 1.0.3, dispatched; this CPU runs AVX3, AVX2,
// SSE4, SCALAR)", "AVX2 (... capped at avx2 by TRAINSCOPE_MAX_CPU_ISA ...)".
std::string simd_summary();
// "AVX2" (any case) -> its level, "reference" -> kReferenceLevel; nullopt
// for a name that is neither one of simd_levels() nor "reference".
std::optional<SimdLevel> parse_simd_level(std::string_view name);

// Runs the kernels at `level` (one of simd_levels(), or kReferenceLevel)
// for a scope, then back to dispatch's own choice: benchmarks time each
// level with its own code, tests compare them.
class ScopedSimdLevel {
 public:
  explicit ScopedSimdLevel(SimdLevel level);
  ~ScopedSimdLevel();
  ScopedSimdLevel(const ScopedSimdLevel&) = delete;
  ScopedSimdLevel& operator=(const ScopedSimdLevel&) = delete;

 private:
  static void set(SimdLevel level);
  SimdLevel previous_;
};

}  // namespace trainscope::kernels

#endif  // TRAINSCOPE_KERNELS_SIMD_H_
