// The ISA probe and its cap (TRAINSCOPE_MAX_CPU_ISA): what a capped probe
// hides, how it says so, and the error for a bad value.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "kernels/cpu_isa.h"
#include "tests/expect_error.h"

namespace trainscope::kernels {
namespace {

CpuIsa sapphire_rapids() {
  CpuIsa isa;
  isa.vendor = "GenuineIntel";
  isa.avx = isa.avx2 = isa.fma = true;
  isa.avx512f = isa.avx512bw = isa.avx512dq = isa.avx512vl = true;
  isa.avx512_bf16 = isa.amx_bf16 = true;
  return isa;
}

// Sets TRAINSCOPE_MAX_CPU_ISA for a scope, restoring what was there.
class ScopedCap {
 public:
  explicit ScopedCap(const char* value) {
    if (const char* old = std::getenv(kName)) old_ = old;
    ::setenv(kName, value, 1);
  }
  ~ScopedCap() {
    if (old_) {
      ::setenv(kName, old_->c_str(), 1);
    } else {
      ::unsetenv(kName);
    }
  }

 private:
  static constexpr const char* kName = "TRAINSCOPE_MAX_CPU_ISA";
  std::optional<std::string> old_;
};

TEST(CpuIsaTest, EachCapHidesWhatIsAboveIt) {
  const CpuIsa full = sapphire_rapids();
  EXPECT_EQ(full.level(), IsaLevel::kAmx);
  EXPECT_EQ(full.summary(), "AVX-512 + AVX512-BF16 + AMX-BF16");
  EXPECT_EQ(cap_isa(full, IsaLevel::kAmx).capped, std::nullopt) << "nothing hidden";
  const CpuIsa bf16 = cap_isa(full, IsaLevel::kAvx512Bf16);
  EXPECT_EQ(bf16.level(), IsaLevel::kAvx512Bf16);
  EXPECT_TRUE(bf16.avx512_bf16 && !bf16.amx_bf16);
  const CpuIsa core = cap_isa(full, IsaLevel::kAvx512Core);
  EXPECT_EQ(core.level(), IsaLevel::kAvx512Core);
  EXPECT_FALSE(core.avx512_bf16);
  const CpuIsa avx2 = cap_isa(full, IsaLevel::kAvx2);
  EXPECT_EQ(avx2.level(), IsaLevel::kAvx2);
  EXPECT_TRUE(avx2.avx2 && avx2.fma && !avx2.avx512f && !avx2.avx512vl);
  EXPECT_EQ(avx2.summary(), "AVX2 (capped at avx2 by TRAINSCOPE_MAX_CPU_ISA)");
  EXPECT_EQ(cap_isa(full, IsaLevel::kSse).level(), IsaLevel::kSse);
}

TEST(CpuIsaTest, Bf16InstructionsAreMissingBelowAvx512Bf16) {
  EXPECT_EQ(bf16_instructions_missing(sapphire_rapids()), "");
  EXPECT_EQ(bf16_instructions_missing(cap_isa(sapphire_rapids(), IsaLevel::kAvx512Bf16)), "");
  EXPECT_EQ(bf16_instructions_missing(cap_isa(sapphire_rapids(), IsaLevel::kAvx512Core)),
            "this CPU (AVX-512 (capped at avx512_core by TRAINSCOPE_MAX_CPU_ISA)) has no bf16 "
            "instructions (AVX512-BF16 or AMX-BF16)");
}

TEST(CpuIsaTest, LevelNamesAreOneDnns) {
  for (IsaLevel l : {IsaLevel::kSse, IsaLevel::kAvx, IsaLevel::kAvx2, IsaLevel::kAvx512Core,
                     IsaLevel::kAvx512Bf16, IsaLevel::kAmx}) {
    EXPECT_EQ(parse_isa_level(isa_level_name(l)), l) << isa_level_name(l);
  }
  EXPECT_EQ(parse_isa_level("AVX512_CORE_AMX"), IsaLevel::kAmx) << "DNNL_MAX_CPU_ISA's spelling";
  EXPECT_EQ(parse_isa_level("avx512"), std::nullopt);
}

TEST(CpuIsaTest, TheProbeHonoursTheCapAndRefusesABadOne) {
  const CpuIsa here = [] {
    ScopedCap none("all");
    return detect_cpu_isa();
  }();
  EXPECT_EQ(here.capped, std::nullopt);
  {
    ScopedCap cap("AVX2");
    const CpuIsa capped = detect_cpu_isa();
    EXPECT_LE(capped.level(), IsaLevel::kAvx2);
    EXPECT_EQ(capped.capped.has_value(), here.level() > IsaLevel::kAvx2);
  }
  ScopedCap bad("avx9");
  EXPECT_TRUE(THROWS_BAD_INPUT(detect_cpu_isa(),
                               "TRAINSCOPE_MAX_CPU_ISA=avx9: unknown ISA level (expected one of "
                               "sse41, avx, avx2, avx512_core, avx512_core_bf16, "
                               "avx512_core_amx, all)"));
}

}  // namespace
}  // namespace trainscope::kernels
