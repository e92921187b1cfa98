// The rows of a comparison of two builds: `trainscope compare` (step time,
// paired runs) and `trainscope work` (deterministic work counts under
// valgrind). Each with its field table (results/fields.h), from which the
// schema derives the tables comparisons, comparison_pairs, comparison_cases
// and work_counts.
//
// A paired comparison records each side's runs as an ordinary suite (base
// first, then head: the head is the database's latest suite, which `report`
// and `check` read by default), so every run keeps its summary, steps and
// memory; the comparison row names both suites, the binaries, what each said
// of its revision (`BIN version`), the seed of the pairs' order, and the
// verdict; a pair row links one base run to one head run.
//
// Thread-safety: plain values.
#ifndef TRAINSCOPE_RESULTS_COMPARISON_RECORDS_H_
#define TRAINSCOPE_RESULTS_COMPARISON_RECORDS_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "results/fields.h"

namespace trainscope::results {

enum class ComparisonKind { kPaired, kWork };
}  // namespace trainscope::results
namespace trainscope {
template <>
struct EnumNames<results::ComparisonKind> {
  static constexpr std::array<std::string_view, 2> names = {"paired", "work"};
  static constexpr bool sql_check = true;
};
}  // namespace trainscope
namespace trainscope::results {

// One build of a comparison: the executable given and what it says it is.
struct BuildInfo {
  std::string binary;   // as given (a wrapper script too)
  std::string version;  // the first line of `BINARY version`, "" when it said nothing
  bool operator==(const BuildInfo&) const = default;
};
template <>
struct Fields<BuildInfo> {
  static constexpr auto table = std::tuple{
      field("binary", &BuildInfo::binary),
      field("version", &BuildInfo::version),
  };
};

struct ComparisonInfo {
  ComparisonKind kind = ComparisonKind::kPaired;
  std::string suite;  // the suite's name
  // kPaired: the suites holding each side's runs; -1 for kWork.
  int64_t base_suite_id = -1;
  int64_t head_suite_id = -1;
  BuildInfo base;
  BuildInfo head;
  double threshold_pct = 10;
  int64_t seed = 0;  // of the pairs' order (kPaired)
  int min_pairs = 0;
  int max_pairs = 0;
  double max_minutes = 0;
  // What both sides ran under: capture_environment(), plus the variables the
  // work lane sets (its ISA caps).
  nlohmann::json environment = nlohmann::json::object();
  std::string verdict;  // overall; "" while running (or its runner died)
  std::string started_at;
  std::optional<std::string> finished_at;
  std::string command_line;
};
template <>
struct Fields<ComparisonInfo> {
  static constexpr auto table = std::tuple{
      field("kind", &ComparisonInfo::kind),
      field("suite", &ComparisonInfo::suite),
      field("base_suite_id", &ComparisonInfo::base_suite_id, {.minus_one_is_null = true}),
      field("head_suite_id", &ComparisonInfo::head_suite_id, {.minus_one_is_null = true}),
      field("base", &ComparisonInfo::base, {.prefix = "base_"}),
      field("head", &ComparisonInfo::head, {.prefix = "head_"}),
      field("threshold_pct", &ComparisonInfo::threshold_pct),
      field("seed", &ComparisonInfo::seed),
      field("min_pairs", &ComparisonInfo::min_pairs),
      field("max_pairs", &ComparisonInfo::max_pairs),
      field("max_minutes", &ComparisonInfo::max_minutes),
      field("environment", &ComparisonInfo::environment),
      field("verdict", &ComparisonInfo::verdict),
      field("started_at", &ComparisonInfo::started_at),
      field("finished_at", &ComparisonInfo::finished_at),
      field("command_line", &ComparisonInfo::command_line),
  };
};

struct ComparisonRow {
  int64_t id = 0;
  ComparisonInfo info;
};

// One pair: a base run and a head run of a case, back to back.
struct ComparisonPair {
  std::string case_name;
  int pair = 0;             // 0, 1, ... within the case
  bool head_first = false;  // the order drawn for it
  int64_t base_run_id = -1;
  int64_t head_run_id = -1;
  double base_step_s = 0;  // each run's step-time median (its slowest rank's)
  double head_step_s = 0;
  bool operator==(const ComparisonPair&) const = default;
};
template <>
struct Fields<ComparisonPair> {
  static constexpr auto table = std::tuple{
      field("case_name", &ComparisonPair::case_name),
      field("pair", &ComparisonPair::pair),
      field("head_first", &ComparisonPair::head_first),
      field("base_run_id", &ComparisonPair::base_run_id),
      field("head_run_id", &ComparisonPair::head_run_id),
      field("base_step_s", &ComparisonPair::base_step_s),
      field("head_step_s", &ComparisonPair::head_step_s),
  };
};

// A case's verdict when the comparison ended.
struct ComparisonCase {
  std::string case_name;
  int pairs = 0;
  double ratio = 0;  // head / base, Hodges-Lehmann
  double low = 0;    // its interval (NaN: none)
  double high = 0;
  double level = 0;
  std::string verdict;   // PASS, REGRESSION, INCONCLUSIVE, FAILED, SKIPPED
  int pairs_needed = 0;  // INCONCLUSIVE: about how many pairs would decide
  std::string note;      // why it failed or was skipped
  bool operator==(const ComparisonCase&) const = default;
};
template <>
struct Fields<ComparisonCase> {
  static constexpr auto table = std::tuple{
      field("case_name", &ComparisonCase::case_name),
      field("pairs", &ComparisonCase::pairs),
      field("ratio", &ComparisonCase::ratio),
      field("low", &ComparisonCase::low),
      field("high", &ComparisonCase::high),
      field("level", &ComparisonCase::level),
      field("verdict", &ComparisonCase::verdict),
      field("pairs_needed", &ComparisonCase::pairs_needed),
      field("note", &ComparisonCase::note),
  };
};

// The work one rank of one side did in one phase of a case's counted steps,
// as callgrind counted it (instructions and cache events under a fixed
// cache geometry) and its cycle estimate: L1 hits + 5 x LL hits + 35 x RAM
// accesses (iai-callgrind's and CodSpeed's model).
struct WorkCount {
  std::string side;  // "base" or "head"
  int repeat = 0;    // several runs of one side (the lane's A/A check)
  std::string case_name;
  int rank = 0;
  std::string phase;  // profiler::kPhaseNames
  int64_t steps = 0;  // counted steps
  int64_t instructions = 0;
  int64_t l1_hits = 0;
  int64_t ll_hits = 0;
  int64_t ram_hits = 0;
  int64_t est_cycles = 0;
  // Data lines (64 bytes) the L1 missed, read or written: the phase's data
  // traffic past the L1, which a fused kernel saves and the estimate above
  // weighs lightly (an LL hit costs 5, whatever the bandwidth).
  int64_t l1_data_misses = 0;
  // Calls into the allocator (malloc, free, memalign...), whose own cost is
  // left out of the counts above: it varies with what other threads freed.
  int64_t allocations = 0;
  bool operator==(const WorkCount&) const = default;
};
template <>
struct Fields<WorkCount> {
  static constexpr auto table = std::tuple{
      field("side", &WorkCount::side),
      field("repeat", &WorkCount::repeat),
      field("case_name", &WorkCount::case_name),
      field("rank", &WorkCount::rank),
      field("phase", &WorkCount::phase),
      field("steps", &WorkCount::steps),
      field("instructions", &WorkCount::instructions),
      field("l1_hits", &WorkCount::l1_hits),
      field("ll_hits", &WorkCount::ll_hits),
      field("ram_hits", &WorkCount::ram_hits),
      field("est_cycles", &WorkCount::est_cycles),
      field("l1_data_misses", &WorkCount::l1_data_misses),
      field("allocations", &WorkCount::allocations),
  };
};

}  // namespace trainscope::results

#endif  // TRAINSCOPE_RESULTS_COMPARISON_RECORDS_H_
