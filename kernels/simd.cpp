#include "kernels/simd.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <optional>

#include "base/check.h"
#include "hwy/highway.h"
#include "hwy/targets.h"
#include "kernels/cpu_isa.h"
#include "kernels/simd_kernels.h"

namespace trainscope::kernels {
namespace {

// What ScopedSimdLevel set: the reference code, or one Highway target (0:
// dispatch's own choice).
std::atomic<bool> g_reference{false};
std::atomic<int64_t> g_forced{0};

// The Highway targets above what TRAINSCOPE_MAX_CPU_ISA allows. Highway has
// no AVX-only target: a cap at avx leaves SSE4.
int64_t above_cap(IsaLevel cap) {
  int64_t above = 0;
  if (cap < IsaLevel::kAvx512Core) above |= HWY_AVX3 | HWY_AVX3_DL;
  if (cap < IsaLevel::kAvx2) above |= HWY_AVX2;
  return above;
}

// Applied once, before the first dispatch chooses: DisableTargets outlasts
// the tests' and benchmarks' SetSupportedTargetsForTest, so no ScopedSimdLevel
// goes past the cap either.
void apply_cap() {
  static const bool applied = [] {
    const CpuIsa isa = detect_cpu_isa();
    if (isa.capped) hwy::DisableTargets(above_cap(*isa.capped));
    return true;
  }();
  (void)applied;
}

const char* target_name(int64_t target) {
  return target == 0 ? "reference" : hwy::TargetName(target);
}

}  // namespace

namespace internal {
bool simd_enabled() {
  apply_cap();
  return !g_reference.load(std::memory_order_relaxed);
}
}  // namespace internal

std::string SimdLevel::name() const { return target_name(target); }

std::vector<SimdLevel> simd_levels() {
  // Listed once, before any ScopedSimdLevel narrows what Highway reports
  // (each scope asks for this list first); best first (lower bits are better).
  static const std::vector<SimdLevel> levels = [] {
    apply_cap();
    std::vector<SimdLevel> out;
    for (int64_t t : hwy::SupportedAndGeneratedTargets()) out.push_back({t});
    return out;
  }();
  return levels;
}

SimdLevel simd_level() {
  if (!internal::simd_enabled()) return kReferenceLevel;
  if (const int64_t forced = g_forced.load(std::memory_order_relaxed)) return {forced};
  return simd_levels().front();
}

std::string simd_summary() {
  const CpuIsa isa = detect_cpu_isa();
  std::string runs;
  for (const SimdLevel& l : simd_levels()) runs += (runs.empty() ? "" : ", ") + l.name();
  const std::string cap = isa.capped ? fmt::format(", capped at {} by TRAINSCOPE_MAX_CPU_ISA",
                                                   isa_level_name(*isa.capped))
                                     : std::string();
  return fmt::format("{} (Highway {}.{}.{}, dispatched{}; this CPU runs {})", simd_level().name(),
                     HWY_MAJOR, HWY_MINOR, HWY_PATCH, cap, runs);
}

std::optional<SimdLevel> parse_simd_level(std::string_view name) {
  std::string upper(name);
  std::ranges::transform(upper, upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (upper == "REFERENCE") return kReferenceLevel;
  for (const SimdLevel& l : simd_levels()) {
    if (l.name() == upper) return l;
  }
  return std::nullopt;
}

ScopedSimdLevel::ScopedSimdLevel(SimdLevel level) : previous_(simd_level()) {
  const std::vector<SimdLevel> levels = simd_levels();
  TS_CHECK(level == kReferenceLevel || std::ranges::find(levels, level) != levels.end())
      << "SIMD level " << level.name() << " is not one this CPU runs here";
  set(level);
}

ScopedSimdLevel::~ScopedSimdLevel() { set(previous_); }

void ScopedSimdLevel::set(SimdLevel level) {
  const bool reference = level == kReferenceLevel;
  // Dispatch's own choice stays unforced, so that it is what a run would pick.
  const int64_t forced = reference || level == simd_levels().front() ? 0 : level.target;
  g_reference.store(reference, std::memory_order_relaxed);
  g_forced.store(forced, std::memory_order_relaxed);
  hwy::SetSupportedTargetsForTest(forced);  // 0: the CPU's own targets again
}

}  // namespace trainscope::kernels
