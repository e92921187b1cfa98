// Memory by category (what trainscope allocated) next to the process view
// (what the kernel says the process uses), per step.
//
// The tracked side wraps kernels/storage.h's counters with MLX-style getters,
// split by MemoryCategory: active_memory() / peak_memory() / reset_peak_memory()
// in total or for one category. The process side reads VmRSS and VmHWM from
// /proc/self/status and Pss from /proc/self/smaps_rollup; a field that cannot
// be read is -1 (e.g. smaps_rollup before Linux 4.14 or under a restrictive
// container). untracked = RSS - tracked active: the runtime, libraries, MPI,
// OpenBLAS buffers, allocator slack and page-granularity rounding.
//
// Cost: the tracked counters are a few atomic loads. The process view reads
// /proc (status ~10 us; smaps_rollup walks the page tables, ~tens of us to ms
// for a large heap), so take it once per step or less, not inside kernels.
//
// Thread-safety: all functions may be called from any thread. Snapshots are
// per-counter exact, not one instant across counters (see storage.h).
#ifndef TRAINSCOPE_PROFILER_MEMORY_TRACKER_H_
#define TRAINSCOPE_PROFILER_MEMORY_TRACKER_H_

#include <cstdint>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "kernels/storage.h"

namespace trainscope::profiler {

using kernels::kNumMemoryCategories;
using kernels::MemoryCategory;
using kernels::MemorySnapshot;

// Bytes currently allocated through the tracked allocator.
int64_t active_memory();
int64_t active_memory(MemoryCategory category);
// Most bytes allocated at once since the last reset_peak_memory().
int64_t peak_memory();
int64_t peak_memory(MemoryCategory category);
// Sets every peak (total and per category) to the current active bytes, e.g.
// after warm-up so the peak reflects steady-state steps.
void reset_peak_memory();
MemorySnapshot tracked_memory();

// The kernel's view of one process; -1 for a field that could not be read.
struct ProcessMemory {
  int64_t rss_bytes = -1;  // VmRSS: resident now
  int64_t hwm_bytes = -1;  // VmHWM: peak resident since start
  int64_t pss_bytes = -1;  // Pss: resident, shared pages divided among sharers
  // AnonHugePages (with Pss): anonymous memory backed by transparent huge
  // pages. A rank whose large buffers fell back to 4 KiB pages streams them
  // through the TLB (the optimizer's pass over the arena most of all).
  int64_t huge_bytes = -1;
};
// Reads /proc/self/status and, if `with_pss`, /proc/self/smaps_rollup.
ProcessMemory self_process_memory(bool with_pss = true);

// One step's memory, as the trainer stores it per step.
struct MemoryRecord {
  int64_t step = -1;
  MemorySnapshot tracked;
  ProcessMemory process;
  // RSS minus tracked active; -1 when RSS is unknown. Can be negative early:
  // allocated but untouched pages are not resident yet.
  int64_t untracked_bytes() const;
};
MemoryRecord memory_record(int64_t step, bool with_process = true, bool with_pss = false);

nlohmann::json to_json(const MemorySnapshot& snapshot);
nlohmann::json to_json(const ProcessMemory& process);
nlohmann::json to_json(const MemoryRecord& record);

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_MEMORY_TRACKER_H_
