// The rows of the results database that are not run summaries: a suite as
// the runner starts it (SuiteInfo, SuiteRow), a case before its job starts
// (RunCase), a run as stored (RunRow) and a rank's step (StepRow), each with
// its field table (results/fields.h), from which the schema (results/schema.h)
// derives the tables' columns and results/results_db.h reads and writes them.
//
// Thread-safety: plain values.
#ifndef TRAINSCOPE_RESULTS_DB_RECORDS_H_
#define TRAINSCOPE_RESULTS_DB_RECORDS_H_

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "results/fields.h"
#include "results/records.h"

namespace trainscope::results {

// A suite as the runner starts it; the database stamps the times.
struct SuiteInfo {
  std::string name;
  std::string definition;  // the suite file (TOML) as run
  std::string started_at;  // ISO-8601 UTC, set by begin_suite
  std::optional<std::string>
      finished_at;  // set by finish_suite; unset: running, or the runner died
  std::string git_revision;
  nlohmann::json host_facts = nlohmann::json::object();   // hostname, cores, memory...
  nlohmann::json environment = nlohmann::json::object();  // capture_environment()
  std::string command_line;
};
template <>
struct Fields<SuiteInfo> {
  static constexpr auto table = std::tuple{
      field("name", &SuiteInfo::name),
      field("definition", &SuiteInfo::definition),
      field("started_at", &SuiteInfo::started_at),
      field("finished_at", &SuiteInfo::finished_at),
      field("git_revision", &SuiteInfo::git_revision),
      field("host_facts", &SuiteInfo::host_facts),
      field("environment", &SuiteInfo::environment),
      field("command_line", &SuiteInfo::command_line),
  };
};

// What the runner knows about a case before launching it.
struct RunCase {
  std::string case_name;
  nlohmann::json config = nlohmann::json::object();  // the case's full config
  std::string mode;                                  // e.g. "ddp"
  std::string reduction;                             // e.g. "fused", "bucketed", "per_tensor"
  std::optional<double> bucket_mb;                   // only for bucketed reduction
  int world_size = 1;
  int threads = 1;                                      // threads per rank
  nlohmann::json transport = nlohmann::json::object();  // OMPI_MCA_* and interfaces asked for
  std::string links;             // tcp: btl_tcp_links ("1", "4"); else the transport ("shm")
  std::string launcher_command;  // the exact mpirun command line
  int repetition = 0;
  // Where it ran: hosts (virtual ones, or a hostfile's), the cores each
  // host's processes could use (0: not pinned), the link asked for between
  // hosts ("" none) and what it delivered (bandwidth and latency fitted to a
  // two-host all-reduce sweep; unset when not measured).
  int host_count = 1;
  int cores_per_host = 0;
  std::string link;
  std::optional<double> link_gbps;
  std::optional<double> link_latency_us;
  bool operator==(const RunCase&) const = default;
};
template <>
struct Fields<RunCase> {
  static constexpr auto table = std::tuple{
      field("case_name", &RunCase::case_name),
      field("config", &RunCase::config),
      field("mode", &RunCase::mode),
      field("reduction", &RunCase::reduction),
      field("bucket_mb", &RunCase::bucket_mb),
      field("world_size", &RunCase::world_size),
      field("threads", &RunCase::threads),
      field("transport", &RunCase::transport),
      field("links", &RunCase::links),
      field("launcher_command", &RunCase::launcher_command),
      field("repetition", &RunCase::repetition),
      field("host_count", &RunCase::host_count),
      field("cores_per_host", &RunCase::cores_per_host),
      field("link", &RunCase::link),
      field("link_gbps", &RunCase::link_gbps),
      field("link_latency_us", &RunCase::link_latency_us),
  };
};

struct SuiteRow {
  int64_t id = 0;
  SuiteInfo info;
};

// One run (a case's repetition) as stored: the case, its state and, when the
// run wrote one, its summary's totals.
struct RunRow {
  int64_t id = 0;
  int64_t suite_id = 0;
  RunCase run_case = {};
  RunStatus status = RunStatus::kRunning;
  std::optional<int> exit_code = {};
  std::string error = {};
  std::string started_at = {};
  std::optional<std::string> finished_at = {};
  // The process that recorded the run (begin_run, mark_skipped): a 'running'
  // run whose runner is gone is stale (mark_stale_running_failed).
  int64_t runner_pid = kUnknown;
  std::string runner_host = {};
  std::string runner_identity = {};  // profiler::process_identity: tells a reused pid apart
  bool has_summary = false;          // finish_run() was given a summary
  Totals totals = {};                // from the summary; NaN without one
};
// The columns begin_run writes (after suite_id); the summary's follow them.
template <>
struct Fields<RunRow> {
  static constexpr auto table = std::tuple{
      field("run_case", &RunRow::run_case),
      field("status", &RunRow::status),
      field("exit_code", &RunRow::exit_code),
      field("error", &RunRow::error, {.default_value = "''"}),
      field("started_at", &RunRow::started_at),
      field("finished_at", &RunRow::finished_at),
      field("runner_pid", &RunRow::runner_pid, {.minus_one_is_null = true}),
      field("runner_host", &RunRow::runner_host),
      field("runner_identity", &RunRow::runner_identity),
  };
};

// One rank's step, as stored in the steps table.
struct StepRow {
  int rank = 0;
  StepRecord record;
  bool operator==(const StepRow&) const = default;
};

}  // namespace trainscope::results

#endif  // TRAINSCOPE_RESULTS_DB_RECORDS_H_
