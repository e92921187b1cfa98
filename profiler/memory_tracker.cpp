#include "profiler/memory_tracker.h"

#include <string>

#include <nlohmann/json.hpp>

#include "profiler/proc_fs.h"

namespace trainscope::profiler {

int64_t active_memory() { return kernels::memory_snapshot().total.active; }
int64_t active_memory(MemoryCategory c) { return kernels::memory_snapshot()[c].active; }
int64_t peak_memory() { return kernels::memory_snapshot().total.peak; }
int64_t peak_memory(MemoryCategory c) { return kernels::memory_snapshot()[c].peak; }
void reset_peak_memory() { kernels::reset_peak_memory(); }
MemorySnapshot tracked_memory() { return kernels::memory_snapshot(); }

ProcessMemory self_process_memory(bool with_pss) {
  ProcessMemory m;
  std::string text;
  if (read_small_file("/proc/self/status", &text) == 0) {
    m.rss_bytes = parse_kb_field(text, "VmRSS:");
    m.hwm_bytes = parse_kb_field(text, "VmHWM:");
  }
  if (with_pss && read_small_file("/proc/self/smaps_rollup", &text) == 0) {
    m.pss_bytes = parse_kb_field(text, "Pss:");
    m.huge_bytes = parse_kb_field(text, "AnonHugePages:");
  }
  return m;
}

int64_t MemoryRecord::untracked_bytes() const {
  return process.rss_bytes < 0 ? -1 : process.rss_bytes - tracked.total.active;
}

MemoryRecord memory_record(int64_t step, bool with_process, bool with_pss) {
  MemoryRecord r;
  r.step = step;
  r.tracked = kernels::memory_snapshot();
  if (with_process) r.process = self_process_memory(with_pss);
  return r;
}

nlohmann::json to_json(const MemorySnapshot& s) {
  nlohmann::json by_category = nlohmann::json::object();
  for (int i = 0; i < kNumMemoryCategories; ++i) {
    by_category[std::string(kernels::category_name(static_cast<MemoryCategory>(i)))] = {
        {"active", s.by_category[i].active}, {"peak", s.by_category[i].peak}};
  }
  return {{"active", s.total.active}, {"peak", s.total.peak}, {"by_category", by_category}};
}

nlohmann::json to_json(const ProcessMemory& p) {
  return {{"rss_bytes", p.rss_bytes}, {"hwm_bytes", p.hwm_bytes}, {"pss_bytes", p.pss_bytes}};
}

nlohmann::json to_json(const MemoryRecord& r) {
  return {{"step", r.step},
          {"tracked", to_json(r.tracked)},
          {"process", to_json(r.process)},
          {"untracked_bytes", r.untracked_bytes()}};
}

}  // namespace trainscope::profiler
