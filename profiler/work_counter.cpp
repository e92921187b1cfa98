#include "profiler/work_counter.h"

#include <cstdlib>
#include <string>

#include <fmt/format.h>
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define TRAINSCOPE_HAVE_CALLGRIND 1
#endif

#include "profiler/phases.h"

namespace trainscope::profiler {
namespace {

// The step's compute: not comm (waiting on the others), eval or checkpoint.
bool counted(int phase) {
  const auto p = static_cast<Phase>(phase);
  return p == Phase::kData || p == Phase::kForward || p == Phase::kBackward ||
         p == Phase::kOptimizer;
}

}  // namespace

void WorkCounter::toggle_collect(bool on) {
#ifdef TRAINSCOPE_HAVE_CALLGRIND
  CALLGRIND_TOGGLE_COLLECT;
#endif
  if (observer_) observer_(on ? "collect on" : "collect off");
}

void WorkCounter::stop_collecting() {
  if (collecting_ < 0) return;
  toggle_collect(false);
  collecting_ = -1;
}

void WorkCounter::dump(int64_t step, int phase) {
  const std::string name = work_dump_name(rank_, step, phase);
#ifdef TRAINSCOPE_HAVE_CALLGRIND
  CALLGRIND_DUMP_STATS_AT(name.c_str());
#endif
  if (observer_) observer_("dump " + name);
}

void WorkCounter::on_phase(int64_t step, int phase) {
  if (!instrumenting_) {
    // Valgrind ran the set-up (data, MPI, allocation) uninstrumented, at
    // its plain speed: the cache simulation starts here, warm by the first
    // counted step.
#ifdef TRAINSCOPE_HAVE_CALLGRIND
    CALLGRIND_START_INSTRUMENTATION;
#endif
    instrumenting_ = true;
    if (observer_) observer_("instrumentation on");
  }
  if (phase == collecting_) return;
  stop_collecting();
  if (phase < 0 || !counted(phase)) return;
  if (pending_ >= 0 && pending_ != phase) dump(step, pending_);
  pending_ = phase;
  toggle_collect(true);
  collecting_ = phase;
}

void WorkCounter::on_step_end(int64_t step) {
  stop_collecting();
  if (pending_ >= 0) dump(step, pending_);
  pending_ = -1;
}

std::unique_ptr<WorkCounter> make_work_counter(int rank) {
#ifdef TRAINSCOPE_HAVE_CALLGRIND
  const char* asked = std::getenv(kCountWorkVariable);
  if (RUNNING_ON_VALGRIND && asked != nullptr && std::string(asked) == "1")
    return std::make_unique<WorkCounter>(rank);
#endif
  return nullptr;
}

std::string work_dump_name(int rank, int64_t step, int phase) {
  return fmt::format("{}{} step {} phase {}", kWorkDumpPrefix, rank, step, kPhaseNames[phase]);
}

namespace {

// Digits at the front of `text` as a number, consumed; false without any.
bool take_number(std::string_view& text, int64_t* value) {
  size_t n = 0;
  int64_t v = 0;
  while (n < text.size() && n < 18 && text[n] >= '0' && text[n] <= '9')
    v = v * 10 + (text[n++] - '0');
  if (n == 0) return false;
  text.remove_prefix(n);
  *value = v;
  return true;
}

bool take(std::string_view& text, std::string_view word) {
  if (!text.starts_with(word)) return false;
  text.remove_prefix(word.size());
  return true;
}

}  // namespace

bool parse_work_dump_name(std::string_view name, WorkDumpName* out) {
  int64_t rank = 0, step = 0;
  if (!take(name, kWorkDumpPrefix) || !take_number(name, &rank) || !take(name, " step ") ||
      !take_number(name, &step) || !take(name, " phase ")) {
    return false;
  }
  for (std::string_view known : kPhaseNames) {
    if (known == name) {
      *out = {static_cast<int>(rank), step, std::string(name)};
      return true;
    }
  }
  return false;
}

}  // namespace trainscope::profiler
