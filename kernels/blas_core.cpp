#include "kernels/blas_core.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" {
char* openblas_get_corename(void);
char* openblas_get_config(void);
}

namespace trainscope::kernels {
namespace {

// Set by choose_blas_core() for the program it re-executes: the core
// OpenBLAS had picked by itself.
constexpr const char* kDetectedVar = "TRAINSCOPE_BLAS_DETECTED";

// The x86 cores of OpenBLAS 0.3.21's DYNAMIC_ARCH list that matter here,
// weakest first: each needs the ISA of its row.
struct CoreSpec {
  const char* name;
  int strength;
};
constexpr CoreSpec kCores[] = {
    {"Prescott", 1},  {"Core2", 2},       {"Penryn", 2},     {"Nehalem", 3},     {"Barcelona", 3},
    {"Bulldozer", 4}, {"Sandybridge", 4}, {"Piledriver", 5}, {"Steamroller", 5}, {"Excavator", 5},
    {"Haswell", 6},   {"Zen", 6},         {"SkylakeX", 7},   {"Cooperlake", 8},
};

}  // namespace

std::string best_openblas_core(const CpuIsa& isa) {
  const bool avx512 = isa.avx512f && isa.avx512bw && isa.avx512dq && isa.avx512vl;
  if (avx512 && isa.avx512_bf16) return "Cooperlake";
  if (avx512) return "SkylakeX";
  if (isa.avx2 && isa.fma) return isa.vendor == "AuthenticAMD" ? "Zen" : "Haswell";
  if (isa.avx) return "Sandybridge";
  return "Prescott";
}

int openblas_core_strength(std::string_view core) {
  for (const CoreSpec& c : kCores) {
    if (core == c.name) return c.strength;
  }
  return 0;
}

std::string_view blas_choice_name(BlasChoice c) {
  switch (c) {
    case BlasChoice::kDetected: return "detected";
    case BlasChoice::kSelected: return "selected";
    case BlasChoice::kEnvironment: return "environment";
  }
  return "?";
}

bool is_fallback(std::string_view core, std::string_view best) {
  const int strength = openblas_core_strength(core);
  return strength > 0 && strength < openblas_core_strength(best);
}

BlasAction blas_action(const BlasInfo& info) {
  if (!info.fallback()) return BlasAction::kNone;
  switch (info.choice) {
    case BlasChoice::kDetected: return BlasAction::kReexec;
    case BlasChoice::kEnvironment: return BlasAction::kNote;
    case BlasChoice::kSelected: return BlasAction::kNone;  // ran again once already
  }
  return BlasAction::kNone;
}

BlasInfo blas_info() {
  BlasInfo info;
  const std::string config = openblas_get_config();
  // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...": the first two words.
  const std::size_t second = config.find(' ', config.find(' ') + 1);
  info.library = config.substr(0, second);
  info.core = openblas_get_corename();
  const CpuIsa isa = detect_cpu_isa();
  info.best = best_openblas_core(isa);
  info.isa = isa.summary();
  const char* detected = std::getenv(kDetectedVar);
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  info.detected = detected != nullptr ? detected : info.core;
  info.choice = detected != nullptr                      ? BlasChoice::kSelected
                : forced != nullptr && forced[0] != '\0' ? BlasChoice::kEnvironment
                                                         : BlasChoice::kDetected;
  return info;
}

void choose_blas_core(char** argv) {
  const BlasInfo info = blas_info();
  switch (blas_action(info)) {
    case BlasAction::kNone: return;
    case BlasAction::kNote:
      // Once per job: every rank of an mpirun job sees the same variable.
      if (const char* rank = std::getenv("OMPI_COMM_WORLD_RANK"); rank && std::strcmp(rank, "0")) {
        return;
      }
      std::fprintf(stderr,
                   "trainscope: note: OPENBLAS_CORETYPE=%s is set, so GEMMs run OpenBLAS's %s "
                   "kernels; this CPU (%s) runs its %s kernels, which are faster: unset "
                   "OPENBLAS_CORETYPE to use them\n",
                   std::getenv("OPENBLAS_CORETYPE"), info.core.c_str(), info.isa.c_str(),
                   info.best.c_str());
      return;
    case BlasAction::kReexec:
      ::setenv("OPENBLAS_CORETYPE", info.best.c_str(), 1);
      ::setenv(kDetectedVar, info.core.c_str(), 1);
      ::execv("/proc/self/exe", argv);
      // Could not run again: go on with OpenBLAS's pick, said once.
      std::fprintf(stderr,
                   "trainscope: note: OpenBLAS fell back to its %s kernels and running again "
                   "with OPENBLAS_CORETYPE=%s failed: %s\n",
                   info.core.c_str(), info.best.c_str(), std::strerror(errno));
      ::unsetenv("OPENBLAS_CORETYPE");
      ::unsetenv(kDetectedVar);
      return;
  }
}

}  // namespace trainscope::kernels
