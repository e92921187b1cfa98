// Plain records that cross a process boundary as JSON: the run summary the
// trainer writes, the all-reduce sweep rows and the memory poller samples.
//
// The trainer's ranks send their figures to rank 0 over MPI; rank 0 fills one
// RunSummary and writes it with save_run_summary() (`trainscope train
// --summary FILE`). The suite runner reads it back with load_run_summary() and
// ingests it into the results database (results/results_db.h). Keeping the
// ranks away from SQLite means a crashing job can never corrupt the database.
//
// JSON layout: field names are the struct member names (snake_case); the
// summary carries the tag `"schema": "trainscope.run_summary/1"`. Parsing is
// strict: a missing required field or a value of the wrong type throws
// trainscope::Error naming the field by its path (`ranks[1].data.bytes_held`)
// and, for the file helpers, the file. Unknown fields are ignored so that a
// newer writer can add fields without breaking older readers.
//
// Conventions shared by all records:
//  * times are seconds (`_s`) unless the name says otherwise (`time_us`);
//    memory figures are bytes.
//  * JSON has no NaN or infinity: a non-finite double is written as null and
//    null is read back as NaN (a diverged loss stays visible as NaN).
//  * "unknown" integers use the sentinel -1 (kUnknown), documented per field;
//    things that are absent by nature are std::optional and written as null.
//
// Thread-safety: plain values; no shared state. The load/save helpers touch
// only the files they are given.
#ifndef TRAINSCOPE_RESULTS_RECORDS_H_
#define TRAINSCOPE_RESULTS_RECORDS_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/step_timer.h"

namespace trainscope::results {

// Value of the `schema` field of every run summary this version writes and
// the only one it reads.
inline constexpr std::string_view kRunSummarySchema = "trainscope.run_summary/1";

// Sentinel for integer figures that could not be measured (e.g. PSS without
// permission to read /proc/PID/smaps_rollup).
inline constexpr int64_t kUnknown = -1;

// State of one run (one case, one repetition). A summary is only ever kOk or
// kFailed; kRunning and kSkipped exist in the database only.
enum class RunStatus { kRunning, kOk, kFailed, kSkipped };

// "running", "ok", "failed", "skipped".
std::string_view to_string(RunStatus status);
// Inverse of to_string; std::nullopt for anything else.
std::optional<RunStatus> parse_run_status(std::string_view text);

// Wall time spent in each phase of one training step, seconds. `comm` is the
// time inside communication calls; the part not hidden behind compute is
// StepRecord::comm_exposed_s.
struct PhaseTimes {
  double data = 0;
  double forward = 0;
  double backward = 0;
  double comm = 0;
  double optimizer = 0;
  double eval = 0;
  double checkpoint = 0;
  bool operator==(const PhaseTimes&) const = default;
};

// The members of a PhaseTimes or PhaseStats in profiler::kPhaseNames order,
// so that one loop handles all seven phases.
template <typename Phases>
auto phase_members(Phases& p) {
  return std::array{&p.data, &p.forward, &p.backward, &p.comm,
                    &p.optimizer, &p.eval, &p.checkpoint};
}

// One optimizer step as seen by one rank.
struct StepRecord {
  int64_t step = 0;
  double loss = 0;        // global mean over ranks (same on every rank)
  double lr = 0;
  double grad_norm = 0;   // after reduction, before clipping
  int64_t tokens = 0;     // tokens this rank consumed in this step
  double step_time_s = 0;
  PhaseTimes phases;
  int64_t comm_calls = 0;
  int64_t comm_bytes = 0;
  double comm_exposed_s = 0;
  int64_t mem_active = 0;  // tracked bytes live at the end of the step
  int64_t mem_peak = 0;    // tracked peak bytes during the step
  bool operator==(const StepRecord&) const = default;
};

// One validation evaluation.
struct ValLoss {
  int64_t step = 0;
  double loss = 0;
  bool operator==(const ValLoss&) const = default;
};

// Distribution of a per-step time over the measured steps, seconds.
struct TimeStats {
  double mean = 0;
  double median = 0;
  double p95 = 0;
  double min = 0;
  double max = 0;
  bool operator==(const TimeStats&) const = default;
};

// TimeStats for each member of PhaseTimes.
struct PhaseStats {
  TimeStats data;
  TimeStats forward;
  TimeStats backward;
  TimeStats comm;
  TimeStats optimizer;
  TimeStats eval;
  TimeStats checkpoint;
  bool operator==(const PhaseStats&) const = default;
};

// Peak bytes held by the tracked allocator, per category of memory.
struct MemoryByCategory {
  int64_t parameters = 0;
  int64_t gradients = 0;
  int64_t optimizer_state = 0;
  int64_t activations = 0;
  int64_t data = 0;
  int64_t comm = 0;
  int64_t workspace = 0;
  int64_t other = 0;
  bool operator==(const MemoryByCategory&) const = default;
};

// What the rank's share of the data set cost it.
struct DataStats {
  int64_t examples_held = 0;
  int64_t tokens_held = 0;
  int64_t bytes_held = 0;   // resident bytes of the data shard
  int64_t bytes_read = 0;   // bytes read from disk
  bool operator==(const DataStats&) const = default;
};

// Communication totals over the whole run.
struct CommStats {
  int64_t calls = 0;
  int64_t bytes = 0;
  double time_s = 0;
  double exposed_s = 0;
  bool operator==(const CommStats&) const = default;
};

// Per-rank totals of a run.
struct RankResult {
  int rank = 0;
  std::string host;
  int64_t pid = 0;
  double tokens_per_s = 0;
  TimeStats step_time;
  PhaseStats phases;
  int64_t tracked_peak_total = 0;
  MemoryByCategory tracked_peak_by_category;
  int64_t vm_hwm = kUnknown;  // /proc/self/status VmHWM, bytes
  int64_t vm_rss = kUnknown;  // VmRSS at the end of the run, bytes
  int64_t pss = kUnknown;     // smaps_rollup Pss, bytes
  DataStats data;
  CommStats comm;
  bool operator==(const RankResult&) const = default;
};

// Whole-run figures (over all ranks).
struct Totals {
  double tokens_per_s = 0;
  double step_time_median_s = 0;
  double step_time_p95_s = 0;
  bool operator==(const Totals&) const = default;
};

// Everything one `trainscope train` run reports; written once by rank 0.
struct RunSummary {
  std::string schema = std::string(kRunSummarySchema);
  std::string trainscope_version;
  std::string git_revision;
  nlohmann::json model = nlohmann::json::object();    // model config as given
  nlohmann::json options = nlohmann::json::object();  // train options (batch, block, steps, lr...)
  int world_size = 1;
  int threads_per_rank = 1;
  std::vector<std::string> hosts;
  // OMPI_MCA_* settings and interfaces in effect. transport_per_rank is empty
  // when every rank saw the same settings, else indexed by rank.
  std::map<std::string, std::string> transport;
  std::vector<std::map<std::string, std::string>> transport_per_rank;
  RunStatus status = RunStatus::kOk;  // kOk or kFailed
  std::string error;                  // empty when status is kOk
  std::optional<int64_t> failed_step;
  // steps[r] holds rank r's steps in order; ranks that did not record steps
  // have an empty list (the vector may be shorter than world_size).
  std::vector<std::vector<StepRecord>> steps;
  std::vector<ValLoss> val;
  std::vector<RankResult> ranks;
  Totals totals;
  bool operator==(const RunSummary&) const = default;
};

// One row of an all-reduce sweep (nccl-tests columns).
struct AllReduceRow {
  std::string transport;   // e.g. "tcp", "shm", "local"
  std::string links;       // interfaces / links used, free text
  int world_size = 1;
  int64_t size_bytes = 0;
  int64_t count = 0;       // elements
  std::string dtype;       // "float32"...
  std::string redop;       // "sum"...
  double time_us = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  int64_t wrong = 0;       // elements that failed verification
  bool operator==(const AllReduceRow&) const = default;
};

// One observation of one process by the memory poller.
struct PollerSample {
  double t_s = 0;           // seconds since the poller started
  int64_t pid = 0;
  int64_t ppid = 0;
  std::string role;         // "launcher", "rank", "runner", "other"...
  int rank = -1;            // -1 for processes that are not ranks
  int64_t rss_bytes = 0;
  int64_t pss_bytes = kUnknown;
  std::string command;
  bool operator==(const PollerSample&) const = default;
};

// nlohmann hooks. from_json is strict (see the file comment) and throws
// trainscope::Error naming the field path.
void to_json(nlohmann::json& j, const StepRecord& v);
void from_json(const nlohmann::json& j, StepRecord& v);
void to_json(nlohmann::json& j, const RankResult& v);
void from_json(const nlohmann::json& j, RankResult& v);
void to_json(nlohmann::json& j, const RunSummary& v);
void from_json(const nlohmann::json& j, RunSummary& v);
void to_json(nlohmann::json& j, const AllReduceRow& v);
void from_json(const nlohmann::json& j, AllReduceRow& v);

// Reads and checks a run summary file. Errors (unreadable file, bad JSON,
// wrong schema tag, missing or mistyped field) name the file and the field.
RunSummary load_run_summary(const std::filesystem::path& path);

// Writes the summary atomically: a temporary file in the same directory,
// flushed to disk, then renamed over `path`. A reader never sees a partial
// file; on failure nothing is left behind and trainscope::Error names `path`.
void save_run_summary(const RunSummary& summary, const std::filesystem::path& path);


// Reads JSON Lines (one record per line, blank lines ignored) of sweep rows;
// errors name the file, the line and the field.
std::vector<AllReduceRow> load_allreduce_rows(const std::filesystem::path& path);

}  // namespace trainscope::results

#endif  // TRAINSCOPE_RESULTS_RECORDS_H_
