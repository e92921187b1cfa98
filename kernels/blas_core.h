// Which OpenBLAS kernel ("core") the GEMMs run on, chosen for the CPU
// instead of guessed.
//
// Debian's OpenBLAS (DYNAMIC_ARCH) picks its core by CPU model number, and a
// CPU it does not know (a new family, a VM's generic model) falls back to a
// weak core silently: SSE3 "Prescott" GEMMs on an AVX-512 machine, 2-4x
// slower. trainscope reads the CPU's vector ISA with cpuid, knows the
// strongest core such a CPU runs, and, when OPENBLAS_CORETYPE is unset and
// OpenBLAS chose weaker, runs itself again with the variable set (OpenBLAS
// reads it once, when the library loads). A variable set by the user or the
// environment is respected; the run then says once that a stronger kernel
// exists. Everything is recorded (BlasInfo) for summaries and reports.
#ifndef TRAINSCOPE_KERNELS_BLAS_CORE_H_
#define TRAINSCOPE_KERNELS_BLAS_CORE_H_

#include <string>
#include <string_view>

#include "kernels/cpu_isa.h"

namespace trainscope::kernels {

// The strongest core of Debian's OpenBLAS 0.3.21 that a CPU with `isa` runs
// (its DYNAMIC_ARCH list; AVX2 cores by vendor).
std::string best_openblas_core(const CpuIsa& isa);
// How strong a core's kernels are (the ISA they need): higher is stronger; 0
// for a core that is not known here.
int openblas_core_strength(std::string_view core);

// Whether kernels of `core` are weaker than `best` (a core this table does
// not know is a newer OpenBLAS's: trusted, never a fallback).
bool is_fallback(std::string_view core, std::string_view best);

// How the core in use came to be.
enum class BlasChoice {
  kDetected,     // OpenBLAS's own pick, already the best for this CPU
  kSelected,     // trainscope set OPENBLAS_CORETYPE to the best core
  kEnvironment,  // OPENBLAS_CORETYPE was set by the user or the environment
};
std::string_view blas_choice_name(BlasChoice c);

struct BlasInfo {
  std::string library;   // "OpenBLAS 0.3.21"
  std::string core;      // in use
  std::string detected;  // what OpenBLAS picked by itself (with kSelected), else core
  std::string best;      // the strongest core this CPU runs
  BlasChoice choice = BlasChoice::kDetected;
  std::string isa;  // CpuIsa::summary()
  bool fallback() const { return is_fallback(core, best); }
};
// The kernels in use now.
BlasInfo blas_info();

// What choose_blas_core() does about `info`: nothing (the best core, or a
// core this table does not know), a note (the environment forced a weaker
// one), or run again with the best (OpenBLAS fell back by itself).
enum class BlasAction { kNone, kNote, kReexec };
BlasAction blas_action(const BlasInfo& info);

// Called first in main(), before anything else touches OpenBLAS or MPI:
// when OPENBLAS_CORETYPE is unset and OpenBLAS fell back, sets it and
// re-executes this program with the same arguments (never returns then).
// With the variable set by someone else and weaker than the CPU allows,
// prints one note to stderr. Returns otherwise.
void choose_blas_core(char** argv);

}  // namespace trainscope::kernels

#endif  // TRAINSCOPE_KERNELS_BLAS_CORE_H_
