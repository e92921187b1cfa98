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

#include "results/comparison_records.h"
#include "results/db_records.h"
#include "results/machine_limits.h"
#include "results/records.h"
#include "results/simulation_records.h"

namespace trainscope::results {

namespace sqlite {
class Connection;
class ReadTransaction;
}  // namespace sqlite
struct ColumnDef;

struct DbOptions {
  // How long a statement waits for a lock held by another connection before
  // failing with a "locked" error. 5 s rides out a reader's checkpoint.
  int busy_timeout_ms = 5000;
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
  // Replaces suite `suite_id`'s simulated steps of `simulator` with `rows`
  // (simulation_store.cpp); one transaction.
  void replace_simulations(int64_t suite_id, std::string_view simulator,
                           std::span<const SimulatedStep> rows);

  // Comparisons of two builds (results/comparison_records.h), written as
  // they go: begun (started_at stamped, verdict ""), a pair committed as
  // soon as both its runs are, and finished with each case's verdict and the
  // overall one in one transaction (comparison_store.cpp).
  int64_t begin_comparison(const ComparisonInfo& info);
  void add_comparison_pair(int64_t comparison_id, const ComparisonPair& pair);
  void add_work_counts(int64_t comparison_id, std::span<const WorkCount> counts);
  void finish_comparison(int64_t comparison_id, std::string_view verdict,
                         std::span<const ComparisonCase> cases);

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
  std::vector<RankResult> rank_results(int64_t run_id);                 // by rank
  std::vector<StepRow> steps(int64_t run_id);                           // by rank, then step
  std::vector<StepRecord> steps(int64_t run_id, int rank);              // by step
  std::vector<ValLoss> val_losses(int64_t run_id);                      // by step
  std::vector<profiler::ProcessSample> poller_samples(int64_t run_id);  // by time
  std::vector<AllReduceRow> allreduce_rows(int64_t run_id);             // by size
  // The limits measured with suite `suite_id`, or with std::nullopt those of
  // no suite, latest first; none in a database made before they were stored.
  std::vector<MachineLimit> machine_limits(std::optional<int64_t> suite_id);
  // Suite `suite_id`'s simulated steps, by simulator, link, overlap and
  // hosts; none in a database made before they were stored.
  std::vector<SimulatedStep> simulations(int64_t suite_id);
  // Comparisons, latest first; none in a database made before they were
  // stored. A pair's, case's or count's rows in the order they were written.
  std::vector<ComparisonRow> list_comparisons();
  std::optional<ComparisonRow> comparison(int64_t comparison_id);
  std::vector<ComparisonPair> comparison_pairs(int64_t comparison_id);
  std::vector<ComparisonCase> comparison_cases(int64_t comparison_id);
  std::vector<WorkCount> work_counts(int64_t comparison_id);
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
