#include "kernels/cpu_isa.h"

#include <cpuid.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "base/check.h"

namespace trainscope::kernels {
namespace {

constexpr const char* kCapVariable = "TRAINSCOPE_MAX_CPU_ISA";

constexpr std::array<std::pair<IsaLevel, std::string_view>, 6> kLevelNames = {{
    {IsaLevel::kSse, "sse41"},
    {IsaLevel::kAvx, "avx"},
    {IsaLevel::kAvx2, "avx2"},
    {IsaLevel::kAvx512Core, "avx512_core"},
    {IsaLevel::kAvx512Bf16, "avx512_core_bf16"},
    {IsaLevel::kAmx, "avx512_core_amx"},
}};

bool bit(unsigned reg, int n) { return (reg >> n) & 1u; }

CpuIsa read_cpuid() {
  CpuIsa isa;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return isa;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  isa.vendor = vendor;
  const unsigned max_leaf = a;
  __get_cpuid(1, &a, &b, &c, &d);
  const bool osxsave = bit(c, 27);
  const bool avx_cpu = bit(c, 28);
  isa.fma = bit(c, 12);
  // The OS must save the wide registers, or the instructions fault.
  unsigned long long xcr0 = 0;
  if (osxsave) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
  }
  const bool ymm = (xcr0 & 0x6) == 0x6, zmm = (xcr0 & 0xe6) == 0xe6;
  const bool tiles = (xcr0 & 0x60000) == 0x60000;
  isa.avx = avx_cpu && ymm;
  if (max_leaf < 7) return isa;
  __cpuid_count(7, 0, a, b, c, d);
  isa.avx2 = isa.avx && bit(b, 5);
  isa.avx512f = zmm && bit(b, 16);
  isa.avx512dq = zmm && bit(b, 17);
  isa.avx512bw = zmm && bit(b, 30);
  isa.avx512vl = zmm && bit(b, 31);
  isa.amx_bf16 = tiles && bit(d, 22);
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  __cpuid_count(7, 1, a1, b1, c1, d1);
  isa.avx512_bf16 = isa.avx512f && bit(a1, 5);
  return isa;
}

}  // namespace

std::string_view isa_level_name(IsaLevel level) {
  for (const auto& [l, name] : kLevelNames) {
    if (l == level) return name;
  }
  return "?";
}

std::optional<IsaLevel> parse_isa_level(std::string_view text) {
  std::string lower(text);
  std::ranges::transform(lower, lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& [level, name] : kLevelNames) {
    if (lower == name) return level;
  }
  return std::nullopt;
}

IsaLevel CpuIsa::level() const {
  const bool avx512 = avx512f && avx512bw && avx512dq && avx512vl;
  if (avx512 && amx_bf16) return IsaLevel::kAmx;
  if (avx512 && avx512_bf16) return IsaLevel::kAvx512Bf16;
  if (avx512) return IsaLevel::kAvx512Core;
  if (avx2) return IsaLevel::kAvx2;
  if (avx) return IsaLevel::kAvx;
  return IsaLevel::kSse;
}

std::string CpuIsa::summary() const {
  std::string s = avx512f ? "AVX-512" : avx2 ? "AVX2" : avx ? "AVX" : "SSE";
  if (avx512_bf16) s += " + AVX512-BF16";
  if (amx_bf16) s += " + AMX-BF16";
  if (capped) s += fmt::format(" (capped at {} by {})", isa_level_name(*capped), kCapVariable);
  return s;
}

std::string bf16_instructions_missing(const CpuIsa& isa) {
  if (isa.avx512_bf16 || isa.amx_bf16) return {};
  return fmt::format("this CPU ({}) has no bf16 instructions (AVX512-BF16 or AMX-BF16)",
                     isa.summary());
}

CpuIsa cap_isa(CpuIsa isa, IsaLevel level) {
  const CpuIsa before = isa;
  if (level < IsaLevel::kAmx) isa.amx_bf16 = false;
  if (level < IsaLevel::kAvx512Bf16) isa.avx512_bf16 = false;
  if (level < IsaLevel::kAvx512Core) {
    isa.avx512f = isa.avx512bw = isa.avx512dq = isa.avx512vl = false;
  }
  if (level < IsaLevel::kAvx2) isa.avx2 = isa.fma = false;
  if (level < IsaLevel::kAvx) isa.avx = false;
  const bool hid = before.amx_bf16 != isa.amx_bf16 || before.avx512_bf16 != isa.avx512_bf16 ||
                   before.avx512f != isa.avx512f || before.avx2 != isa.avx2 ||
                   before.avx != isa.avx;
  if (hid) isa.capped = level;
  return isa;
}

CpuIsa detect_cpu_isa() {
  const CpuIsa isa = read_cpuid();
  const char* cap = std::getenv(kCapVariable);
  if (cap == nullptr || cap[0] == '\0' || std::string_view(cap) == "all" ||
      std::string_view(cap) == "ALL") {
    return isa;
  }
  const std::optional<IsaLevel> level = parse_isa_level(cap);
  if (!level) {
    std::string names;
    for (const auto& [l, name] : kLevelNames) names += fmt::format("{}, ", name);
    throw Error(
        fmt::format("{}={}: unknown ISA level (expected one of {}all)", kCapVariable, cap, names));
  }
  return cap_isa(isa, *level);
}

}  // namespace trainscope::kernels
