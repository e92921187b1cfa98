// What the CPU can execute, read with cpuid: the one probe every ISA
// decision asks (OpenBLAS's core, --precision bf16, doctor, and the tests
// that need an instruction set).
//
// TRAINSCOPE_MAX_CPU_ISA caps what the probe reports, as oneDNN's
// DNNL_MAX_CPU_ISA / ONEDNN_MAX_CPU_ISA cap what oneDNN dispatches to, so
// that one machine can show how the project behaves on weaker CPUs
// (scripts/check-cpu-matrix.sh sets all three). Values, weakest first, are
// oneDNN's names: sse41, avx, avx2, avx512_core, avx512_core_bf16,
// avx512_core_amx (and "all", no cap). The cap hides instructions the probe
// reports, and the element-wise kernels' dispatch follows it (kernels/simd.h:
// capped, they run the weaker level's own code); the rest, compiled with
// -march=native, still uses what it was compiled for.
#ifndef TRAINSCOPE_KERNELS_CPU_ISA_H_
#define TRAINSCOPE_KERNELS_CPU_ISA_H_

#include <optional>
#include <string>
#include <string_view>

namespace trainscope::kernels {

// Vector ISA levels that change what trainscope runs, weakest first.
enum class IsaLevel { kSse, kAvx, kAvx2, kAvx512Core, kAvx512Bf16, kAmx };

// oneDNN's name of a level ("avx2", "avx512_core_bf16", ...).
std::string_view isa_level_name(IsaLevel level);
// Inverse of isa_level_name, case-insensitive, also accepting "sse41";
// std::nullopt for anything else.
std::optional<IsaLevel> parse_isa_level(std::string_view text);

// What cpuid says the CPU can execute (and the OS has enabled).
struct CpuIsa {
  std::string vendor;  // "GenuineIntel", "AuthenticAMD"
  bool avx = false, avx2 = false, fma = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512_bf16 = false;
  bool amx_bf16 = false;  // AMX tiles with bf16 (Sapphire Rapids)
  // Set when TRAINSCOPE_MAX_CPU_ISA hid something: the level it capped to.
  std::optional<IsaLevel> capped;

  // The strongest level this ISA reaches.
  IsaLevel level() const;
  // "AVX-512 + AVX512-BF16 + AMX-BF16" and so on: the strongest first; a
  // capped probe adds " (capped at avx2 by TRAINSCOPE_MAX_CPU_ISA)".
  std::string summary() const;
};

// Empty when `isa` has bf16 instructions (AVX512-BF16 or AMX-BF16), which
// --precision bf16 needs; else what is missing, naming the ISA:
// "this CPU (AVX2) has no bf16 instructions (AVX512-BF16 or AMX-BF16)".
std::string bf16_instructions_missing(const CpuIsa& isa);

// Everything of `isa` above `level` cleared (capped is set when that hid
// anything).
CpuIsa cap_isa(CpuIsa isa, IsaLevel level);

// The CPU's ISA, capped by TRAINSCOPE_MAX_CPU_ISA when it is set. Throws
// trainscope::Error naming the variable and the accepted values when it is
// set to anything else.
CpuIsa detect_cpu_isa();

}  // namespace trainscope::kernels

#endif  // TRAINSCOPE_KERNELS_CPU_ISA_H_
