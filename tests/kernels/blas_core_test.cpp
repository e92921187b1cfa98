#include <gtest/gtest.h>

#include "kernels/blas_core.h"

namespace trainscope::kernels {
namespace {

CpuIsa isa_with(bool avx2, bool avx512, bool bf16, const char* vendor = "GenuineIntel") {
  CpuIsa isa;
  isa.vendor = vendor;
  isa.avx = avx2 || avx512;
  isa.avx2 = isa.fma = avx2 || avx512;
  isa.avx512f = isa.avx512bw = isa.avx512dq = isa.avx512vl = avx512;
  isa.avx512_bf16 = bf16;
  return isa;
}

// The two machines: a Sapphire Rapids VM OpenBLAS took for a
// Prescott, and a Zen 5 it knows.
TEST(BlasCoreTest, TheStrongestCoreTheIsaRuns) {
  EXPECT_EQ(best_openblas_core(isa_with(false, false, false)), "Prescott");
  EXPECT_EQ(best_openblas_core(isa_with(true, false, false)), "Haswell");
  EXPECT_EQ(best_openblas_core(isa_with(true, false, false, "AuthenticAMD")), "Zen");
  EXPECT_EQ(best_openblas_core(isa_with(true, true, false)), "SkylakeX");
  EXPECT_EQ(best_openblas_core(isa_with(true, true, true)), "Cooperlake");
  EXPECT_EQ(isa_with(true, true, true).summary(), "AVX-512 + AVX512-BF16");
  EXPECT_LT(openblas_core_strength("Prescott"), openblas_core_strength("Haswell"));
  EXPECT_LT(openblas_core_strength("Haswell"), openblas_core_strength("SkylakeX"));
  EXPECT_LT(openblas_core_strength("SkylakeX"), openblas_core_strength("Cooperlake"));
  EXPECT_EQ(openblas_core_strength("SapphireRapids"), 0) << "not in 0.3.21's list";
}

BlasInfo running(const char* core, const char* best) {
  BlasInfo info;
  info.core = core;
  info.best = best;
  return info;
}

TEST(BlasCoreTest, FallbacksAreFixedOrSaidNeverSecondGuessed) {
  BlasInfo info = running("Prescott", "SkylakeX");
  info.choice = BlasChoice::kDetected;
  EXPECT_TRUE(info.fallback());
  EXPECT_EQ(blas_action(info), BlasAction::kReexec);
  info.choice = BlasChoice::kEnvironment;  // OPENBLAS_CORETYPE=Prescott by someone else
  EXPECT_EQ(blas_action(info), BlasAction::kNote);
  info.choice = BlasChoice::kSelected;  // ran again already: never loops
  EXPECT_EQ(blas_action(info), BlasAction::kNone);
  info = running("SkylakeX", "SkylakeX");
  EXPECT_FALSE(info.fallback());
  EXPECT_EQ(blas_action(info), BlasAction::kNone);
  info = running("SapphireRapids", "Cooperlake");  // a newer OpenBLAS's core
  EXPECT_FALSE(info.fallback());
  EXPECT_EQ(blas_action(info), BlasAction::kNone);
}

// On this machine: the library answers, and its pick is judged against
// this CPU's own ISA.
TEST(BlasCoreTest, InfoOnThisMachineIsConsistent) {
  const BlasInfo info = blas_info();
  EXPECT_EQ(info.library.rfind("OpenBLAS ", 0), 0u) << info.library;
  EXPECT_FALSE(info.core.empty());
  EXPECT_EQ(info.best, best_openblas_core(detect_cpu_isa()));
  EXPECT_EQ(info.isa, detect_cpu_isa().summary());
}

}  // namespace
}  // namespace trainscope::kernels
