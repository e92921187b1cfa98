// The results database: one SQLite file holding every suite, run, per-rank
// result, step, validation loss, poller sample and all-reduce sweep row.
//
// Who writes. There is exactly one writer per database: the suite runner, a
// single process on the launch host. MPI ranks never open the database. The
// ranks' figures reach rank 0 over MPI; rank 0 writes one JSON run summary
// atomically (`trainscope train --summary FILE`, see results/records.h), and
// the runner ingests it here with finish_run(), in one transaction per case.
// Why: no SQLite locking across ranks or hosts (SQLite locks are unreliable on
// NFS), a crashing job cannot corrupt the database (it never had it open), and
// the runner, which outlives the job, can always mark a case failed.
//
// Lifecycle of a run: begin_run() inserts it as 'running' and commits at
// once, so a runner that dies leaves a trace; finish_run() sets the final
// status and inserts the whole summary atomically: on any error it rolls
// back, the run stays 'running' and earlier runs are untouched. Each run
// records its runner (pid, host, process identity); on start-up a runner
// calls mark_stale_running_failed(), which fails the 'running' runs of
// runners that died and leaves those of a runner still at work (two runners
// may share a database; SQLite serializes their transactions).
//
// Storage: WAL journal (readers never block the writer nor see half a
// transaction), foreign keys on, a busy timeout after which a lock held by
// someone else becomes a clear "locked" error. The tables' columns come from
// the records' field tables (results/fields.h). The schema is versioned and
// migrated on open (results/schema.h); a newer database is refused. A column
// declared after a database was made is added when it is next opened for
// writing, and reads as NULL (NaN, unknown) until then.
//
// Errors: every failure the user can act on (not a database, corrupt, newer
// schema, unwritable path, locked, unknown id) throws trainscope::Error naming
// the database file. Calling a writer method on a database opened for reading
// is a programming error (TS_CHECK).
//
// Thread-safety: a ResultsDb is used by one thread at a time. Other threads
// or processes may open their own ResultsDb for reading at any time.
#ifndef TRAINSCOPE_RESULTS_RESULTS_DB_H_
#define TRAINSCOPE_RESULTS_RESULTS_DB_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/machine_limits.h"
#include "results/records.h"

namespace trainscope::results {

namespace sqlite {
class Connection;
class ReadTransaction;
}
struct ColumnDef;

struct DbOptions {
  // How long a statement waits for a lock held by another connection before
  // failing with a "locked" error. 5 s rides out a reader's checkpoint.
  int busy_timeout_ms = 5000;
};

// A suite as the runner starts it; the database stamps the times.
struct SuiteInfo {
  std::string name;
  std::string definition;    // the suite file (TOML) as run
  std::string started_at;                  // ISO-8601 UTC, set by begin_suite
  std::optional<std::string> finished_at;  // set by finish_suite; unset: running, or the runner died
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
  std::string mode;                // e.g. "ddp"
  std::string reduction;           // e.g. "fused", "bucketed", "per_tensor"
  std::optional<double> bucket_mb; // only for bucketed reduction
  int world_size = 1;
  int threads = 1;                 // threads per rank
  nlohmann::json transport = nlohmann::json::object();  // OMPI_MCA_* and interfaces asked for
  std::string links;               // tcp: btl_tcp_links ("1", "4"); else the transport ("shm")
  std::string launcher_command;    // the exact mpirun command line
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
  bool has_summary = false;  // finish_run() was given a summary
  Totals totals = {};        // from the summary; NaN without one
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

// "" when `path` can hold a results database: a regular file (or a symlink
// to one) or nothing yet; else why not, after the path ("is a FIFO: ...").
// SQLite writes PATH-journal and PATH-wal beside the file and reads it by
// offset, so a device node or a FIFO is never opened: /dev/null would get a
// /dev/null-journal, a FIFO would block. Checked by open_for_*() (Error,
// bad input) and by the --db flags before any work.
std::string db_file_problem(const std::filesystem::path& path);

class ResultsDb {
 public:
  // Opens (creating if needed) and migrates to the current schema.
  static ResultsDb open_for_writing(const std::filesystem::path& path, DbOptions options = {});
  // Opens an existing database read-only. Its schema must be current: an
  // older one must be opened for writing once to migrate.
  static ResultsDb open_for_reading(const std::filesystem::path& path, DbOptions options = {});

  ResultsDb(ResultsDb&&) noexcept;
  ResultsDb& operator=(ResultsDb&&) noexcept;
  ~ResultsDb();

  const std::filesystem::path& path() const;
  int schema_version();
  // "ok", or SQLite's list of problems.
  std::string integrity_check();

  // ---- Writer (open_for_writing only) ----

  // Records a new suite as started now; returns its id.
  int64_t begin_suite(const SuiteInfo& info);
  // Stamps the suite's finished_at.
  void finish_suite(int64_t suite_id);
  // Inserts a run with status 'running' and commits it; returns its id.
  int64_t begin_run(int64_t suite_id, const RunCase& run_case);
  // Final state of a running run. `status` is kOk or kFailed; `summary` may be
  // null (the job died before writing one). Everything goes in one
  // transaction; on error nothing changes and the run stays 'running'.
  void finish_run(int64_t run_id, RunStatus status, int exit_code, std::string_view error,
                  const RunSummary* summary);
  // Marks failed, with `reason`, every 'running' run whose runner is gone:
  // on this host, no process has its pid and identity any more (or the suite
  // predates runner records); returns how many. A runner on another host is
  // left alone, since whether it lives cannot be told from here.
  int mark_stale_running_failed(std::string_view reason);
  // Records a case that was not run; returns its run id.
  int64_t mark_skipped(int64_t suite_id, const RunCase& run_case, std::string_view reason);
  // Append rows to a run (one transaction per call).
  void add_poller_samples(int64_t run_id, std::span<const profiler::ProcessSample> samples);
  void add_allreduce_rows(int64_t run_id, std::span<const AllReduceRow> rows);
  // Stores measured limits, of suite `suite_id` or, with std::nullopt, of
  // no suite (`trainscope doctor --db`); one transaction.
  void add_machine_limits(std::optional<int64_t> suite_id, std::span<const MachineLimit> limits);

  // ---- Reader ----

  // While a Snapshot lives, every read method sees the database as of the
  // moment snapshot() was called, even as a runner commits cases: a report
  // taken mid-suite never pairs a run's 'running' row with its summary.
  // Single reads are always consistent on their own; take a snapshot around
  // reads that must agree with each other. Writer methods may not be called
  // while it lives. Must not outlive this ResultsDb.
  class Snapshot {
   public:
    ~Snapshot();
    Snapshot(const Snapshot&) = delete;
    Snapshot& operator=(const Snapshot&) = delete;

   private:
    friend class ResultsDb;
    explicit Snapshot(sqlite::Connection& db);
    std::unique_ptr<sqlite::ReadTransaction> transaction_;
  };
  [[nodiscard]] Snapshot snapshot();

  std::vector<SuiteRow> list_suites();  // latest first
  std::optional<int64_t> latest_suite_id();
  std::optional<SuiteRow> suite(int64_t suite_id);
  std::vector<RunRow> list_runs(int64_t suite_id);  // in order of begin_run
  std::vector<RunRow> running_runs();               // every 'running' run, by id
  std::optional<RunRow> run(int64_t run_id);
  std::vector<RankResult> rank_results(int64_t run_id);      // by rank
  std::vector<StepRow> steps(int64_t run_id);                // by rank, then step
  std::vector<StepRecord> steps(int64_t run_id, int rank);   // by step
  std::vector<ValLoss> val_losses(int64_t run_id);           // by step
  std::vector<profiler::ProcessSample> poller_samples(int64_t run_id);  // by time
  std::vector<AllReduceRow> allreduce_rows(int64_t run_id);  // by size
  // The limits measured with suite `suite_id`, or with std::nullopt those of
  // no suite, latest first; none in a database made before they were stored.
  std::vector<MachineLimit> machine_limits(std::optional<int64_t> suite_id);
  // The run's summary as ingested, rebuilt from the tables; std::nullopt if
  // the run has none.
  std::optional<RunSummary> run_summary(int64_t run_id);

 private:
  ResultsDb(std::unique_ptr<sqlite::Connection> db, bool writable);
  void require_writable() const;
  // The SELECT list of `columns` of `table`: NULL for a column the database
  // does not have (made before the field existed).
  std::string select_list(std::string_view table, const std::vector<ColumnDef>& columns) const;

  std::unique_ptr<sqlite::Connection> db_;
  bool writable_ = false;
  std::map<std::string, std::set<std::string>, std::less<>> existing_columns_;
};

// Current time as ISO-8601 UTC with milliseconds, e.g. 2026-11-21T17:28:33.123Z.
std::string utc_timestamp();

}  // namespace trainscope::results

#endif  // TRAINSCOPE_RESULTS_RESULTS_DB_H_
