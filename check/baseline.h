// What a regression check compares (check/regression_check.h):
// a suite's figures per case (CheckSuite: timings, deterministic figures,
// sweeps, the configuration), taken from a results database or a baseline
// file, and the ratio rules that compare two cases of one suite. Baseline
// files are JSON with a schema tag ("trainscope.baseline/1"), written
// atomically and read strictly.
//
// Thread-safety: pure functions; save_baseline writes atomically.
#ifndef TRAINSCOPE_CHECK_BASELINE_H_
#define TRAINSCOPE_CHECK_BASELINE_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/suite_data.h"
#include "results/fields.h"

namespace trainscope::check {

inline constexpr std::string_view kBaselineSchemaPrefix = "trainscope.baseline/";
inline constexpr int kBaselineSchemaVersion = 1;

// A ratio rule, e.g. "fused/per-tensor<=1.10" or "tokens_per_s:sharded/naive>=1.5".
struct RatioRule {
  std::string metric = "step_time";  // "step_time" or "tokens_per_s"
  std::string numerator;
  std::string denominator;
  bool at_most = true;  // "<=" (else ">=")
  double bound = 1;
  std::string text() const;
  bool operator==(const RatioRule&) const = default;
};
RatioRule parse_ratio_rule(std::string_view text);

// busbw of one message size of an all-reduce sweep, GB/s.
struct BusbwSamples {
  int64_t size_bytes = 0;
  std::vector<double> per_repetition;  // the row's busbw, one per usable repetition
  std::vector<double> per_call;        // every timed call of every usable repetition
  bool operator==(const BusbwSamples&) const = default;
};

// Noisy figures of a case: compared with a significance test.
struct CaseTimings {
  std::vector<double> step_time_median_s;  // one per usable repetition
  std::vector<double> tokens_per_s;        // one per usable repetition
  std::vector<double> step_times_s;        // rank 0, every usable repetition, warm-up left out
  std::vector<BusbwSamples> busbw;         // all-reduce sweeps: by size
  bool operator==(const CaseTimings&) const = default;
};

// Figures of a case that a fixed seed makes exact.
struct CaseDeterministic {
  // Per-rank integers of the first usable repetition ("tracked.parameters",
  // "tracked.total", "comm.calls", "comm.bytes", ...), one value per rank.
  std::map<std::string, std::vector<int64_t>> counters;
  std::vector<double> train_loss;  // rank 0, by step
  std::vector<double> val_loss;    // by evaluation
  bool operator==(const CaseDeterministic&) const = default;
};

// The figures check compares for one case; a baseline file's cases.
struct CaseRecord {
  std::string name;
  nlohmann::json config;  // mode, reduction, bucket_mb, world_size, threads, links, config
  std::string status;     // "ok", "partial", "failed", "skipped", "running"
  std::string reason;
  CaseTimings timings;
  CaseDeterministic deterministic;
  // Empty unless some usable repetition was measured on a loaded machine;
  // then how many and where, e.g. "1 of 1 usable repetition(s): node0 at the
  // end: 3 runnable threads of other processes + 2 of the job's > 2 cores".
  std::string loaded;
  // The GEMM kernels its usable repetitions ran, e.g. "OpenBLAS 0.3.21
  // Cooperlake" (several, comma-separated, if they differ); empty when not
  // recorded. Timings on other kernels are not the same measurement.
  std::string kernels;
  bool usable() const { return status == "ok" || status == "partial"; }
  bool operator==(const CaseRecord&) const = default;
};

struct CheckSuite {
  std::string name;      // suite name
  std::string source;    // where it came from, for messages
  int64_t suite_id = 0;  // in its database; 0 for a baseline file
  std::vector<CaseRecord> cases;
  std::vector<RatioRule> ratios;  // from a baseline file
  // A baseline file's timing threshold, percent (--save-baseline --threshold):
  // a gate's rules travel with its baseline.
  std::optional<double> threshold_pct;
  // From `check calibrate`: the repetitions a side a check needs on this
  // machine for the threshold, and the calibration (A/A false alarms, each
  // case's noise) that says so.
  std::optional<int64_t> repetitions;
  nlohmann::json calibration;
  // Where it was measured (hostname, cpu_model, cores): timings are compared
  // with a baseline only from the same machine (empty: unknown).
  nlohmann::json machine = nlohmann::json::object();
  const CaseRecord* find(std::string_view case_name) const;
};

}  // namespace trainscope::check

// A baseline file is these records (results/fields.h), under a schema tag.
namespace trainscope::results {
template <>
struct Fields<check::BusbwSamples> {
  using T = check::BusbwSamples;
  static constexpr auto table = std::tuple{
      field("size_bytes", &T::size_bytes),
      field("per_repetition_gbps", &T::per_repetition),
      field("per_call_gbps", &T::per_call),
  };
};
template <>
struct Fields<check::CaseTimings> {
  using T = check::CaseTimings;
  static constexpr auto table = std::tuple{
      field("step_time_median_s", &T::step_time_median_s),
      field("tokens_per_s", &T::tokens_per_s),
      field("step_times_s", &T::step_times_s),
      field("busbw", &T::busbw).absent_ok(),
  };
};
template <>
struct Fields<check::CaseDeterministic> {
  using T = check::CaseDeterministic;
  static constexpr auto table = std::tuple{
      field("counters", &T::counters),
      field("train_loss", &T::train_loss),
      field("val_loss", &T::val_loss),
  };
};
template <>
struct Fields<check::CaseRecord> {
  using T = check::CaseRecord;
  static constexpr auto table = std::tuple{
      field("name", &T::name),
      field("config", &T::config),
      field("status", &T::status),
      field("reason", &T::reason),
      field("timings", &T::timings),
      field("deterministic", &T::deterministic),
      field("loaded", &T::loaded).absent_ok(),
      field("kernels", &T::kernels).absent_ok(),
  };
};
// Written as its text, e.g. "fused/per-tensor<=1.10".
template <>
struct JsonCodec<check::RatioRule> {
  static nlohmann::json write(const check::RatioRule& rule) { return rule.text(); }
  static void read(const JsonReader& r, check::RatioRule& rule);
};
template <>
struct Fields<check::CheckSuite> {
  using T = check::CheckSuite;
  static constexpr auto table = std::tuple{
      field("suite", &T::name),
      field("source", &T::source).absent_ok(),
      field("cases", &T::cases),
      field("ratios", &T::ratios).absent_ok(),
      field("threshold_pct", &T::threshold_pct).absent_ok(),
      field("repetitions", &T::repetitions).absent_ok(),
      field("calibration", &T::calibration).absent_ok(),
      field("machine", &T::machine).absent_ok(),
  };
  // A threshold a later check applies must be a percentage it can apply.
  static void validate(const T& suite, const JsonReader& r);
};
}  // namespace trainscope::results

namespace trainscope::check {

CheckSuite extract_check_suite(const analysis::SuiteData& suite);

nlohmann::json baseline_to_json(const CheckSuite& suite);
// `where` names the source in error messages (the file).
CheckSuite baseline_from_json(const nlohmann::json& j, const std::string& where);
void save_baseline(const CheckSuite& suite, const std::filesystem::path& path);
CheckSuite load_baseline(const std::filesystem::path& path);

// The current suite of a check: `selector` ("latest" or an id) in `db`.
CheckSuite load_check_suite(const std::filesystem::path& db, std::string_view selector);

// A baseline from either a baseline JSON file or a results database (told
// apart by the SQLite file header). From a database: the suite chosen by
// `selector` ("latest" or an id), where "latest" means the latest suite named
// `suite_name`, leaving out `current_db`'s suite `current_suite_id` when the
// baseline is that same database file.
CheckSuite load_baseline_any(const std::filesystem::path& path, std::string_view selector,
                             const std::string& suite_name, const std::filesystem::path& current_db,
                             int64_t current_suite_id);

}  // namespace trainscope::check

#endif  // TRAINSCOPE_CHECK_BASELINE_H_
