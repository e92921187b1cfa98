#include "kernels/storage.h"

#include <sys/mman.h>

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace trainscope::kernels {
namespace {

constexpr std::size_t kAlignment = 64;
// Blocks this large are 2 MiB aligned and advised to use huge pages: the big
// activation and logits buffers otherwise spend time in TLB misses.
constexpr std::size_t kHugePageThreshold = std::size_t{4} << 20;
constexpr std::size_t kHugePage = std::size_t{2} << 20;

struct AtomicCounters {
  std::atomic<int64_t> active{0};
  std::atomic<int64_t> peak{0};
};

AtomicCounters g_total;
AtomicCounters g_categories[kNumMemoryCategories];

void raise_peak(AtomicCounters& c, int64_t now) {
  int64_t peak = c.peak.load(std::memory_order_relaxed);
  while (now > peak && !c.peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {}
}

void add(AtomicCounters& c, int64_t delta) {
  int64_t now = c.active.fetch_add(delta, std::memory_order_relaxed) + delta;
  if (delta > 0) raise_peak(c, now);
}

}  // namespace

std::string_view category_name(MemoryCategory category) {
  return kMemoryCategoryNames[static_cast<int>(category)];
}

void* tracked_alloc(std::size_t bytes, MemoryCategory category) {
  if (bytes == 0) return nullptr;
  const bool huge = bytes >= kHugePageThreshold;
  const std::size_t align = huge ? kHugePage : kAlignment;
  const std::size_t rounded = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (p == nullptr) throw std::bad_alloc();
  if (huge) madvise(p, rounded, MADV_HUGEPAGE);
  // Zeroing also faults every page in now, not in the first timed step.
  std::memset(p, 0, bytes);
  adopt_tracked(bytes, category);
  return p;
}

void tracked_free(void* ptr, std::size_t bytes, MemoryCategory category) {
  if (ptr == nullptr) return;
  std::free(ptr);
  release_tracked(bytes, category);
}

void adopt_tracked(std::size_t bytes, MemoryCategory category) {
  add(g_total, static_cast<int64_t>(bytes));
  add(g_categories[static_cast<int>(category)], static_cast<int64_t>(bytes));
}

void release_tracked(std::size_t bytes, MemoryCategory category) {
  add(g_total, -static_cast<int64_t>(bytes));
  add(g_categories[static_cast<int>(category)], -static_cast<int64_t>(bytes));
}

MemorySnapshot memory_snapshot() {
  MemorySnapshot s;
  s.total = {g_total.active.load(std::memory_order_relaxed),
             g_total.peak.load(std::memory_order_relaxed)};
  for (int i = 0; i < kNumMemoryCategories; ++i) {
    s.by_category[i] = {g_categories[i].active.load(std::memory_order_relaxed),
                        g_categories[i].peak.load(std::memory_order_relaxed)};
  }
  return s;
}

void reset_peak_memory() {
  g_total.peak.store(g_total.active.load(std::memory_order_relaxed), std::memory_order_relaxed);
  for (auto& c : g_categories) {
    c.peak.store(c.active.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
}

std::string format_bytes(double bytes) {
  if (bytes < 0) return "-";
  if (bytes < 1024) return fmt::format("{:.0f} B", bytes);
  if (bytes < 1024.0 * 1024) return fmt::format("{:.1f} KiB", bytes / 1024);
  if (bytes < 1024.0 * 1024 * 1024) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024));
  return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
}

}  // namespace trainscope::kernels
