#include "results/results_db.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "base/check.h"
#include "base/json_reader.h"
#include "profiler/proc_fs.h"
#include "results/schema.h"
#include "results/sql_fields.h"
#include "results/sql_statements.h"
#include "results/sqlite.h"

namespace trainscope::results {

namespace fs = std::filesystem;
using nlohmann::json;
using sqlite::Connection;
using sqlite::Statement;
using sqlite::Transaction;

std::string utc_timestamp() {
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000);
}

namespace {

using profiler::Phase;
using profiler::ProcessSample;

const Scope kSeconds{.suffix = "_s"};

void insert_rank_rows(Connection& db, int64_t run_id, const RankResult& r) {
  Statement rank(db, insert_sql("rank_results", keys({"run_id"}), columns_of<RankResult>()));
  bind_record(rank.bind(1, run_id), 2, r);
  rank.run(fmt::format("storing results of rank {} of run {}", r.rank, run_id));
  Statement phase(db, insert_sql("rank_phase_stats", keys({"run_id", "rank", "phase"}),
                                 columns_of<TimeStats>(kSeconds)));
  for (size_t i = 0; i < r.phases.values.size(); ++i) {
    const auto name = profiler::kPhaseNames[i];
    bind_record(phase.bind(1, run_id).bind(2, r.rank).bind(3, name), 4, r.phases.values[i]);
    phase.run(fmt::format("storing {} phase stats of rank {} of run {}", name, r.rank, run_id));
  }
}

void insert_summary_rows(Connection& db, int64_t run_id, const RunSummary& summary) {
  for (const RankResult& r : summary.ranks) insert_rank_rows(db, run_id, r);
  Statement step(db, insert_sql("steps", keys({"run_id", "rank"}), columns_of<StepRecord>()));
  for (size_t rank = 0; rank < summary.steps.size(); ++rank) {
    for (const StepRecord& s : summary.steps[rank]) {
      bind_record(step.bind(1, run_id).bind(2, static_cast<int64_t>(rank)), 3, s);
      step.run(fmt::format("storing step {} of rank {} of run {}", s.step, rank, run_id));
    }
  }
  Statement val(db, insert_sql("val_losses", keys({"run_id"}), columns_of<ValLoss>()));
  for (const ValLoss& v : summary.val) {
    bind_record(val.bind(1, run_id), 2, v);
    val.run(fmt::format("storing validation loss at step {} of run {}", v.step, run_id));
  }
}

RunRow read_run_row(Statement& s, const fs::path& db) {
  RunRow r;
  r.id = s.column_int64(0);
  r.suite_id = s.column_int64(1);
  JsonReader::rethrow_in(fmt::format("results database {}, run {}", db.string(), r.id), [&] {
    const int column = read_record(s, 2, r);
    r.has_summary = s.column_int64(column) != 0;
    read_record(s, column + 1, r.totals);
  });
  return r;
}

SuiteRow read_suite_row(Statement& s, const fs::path& db) {
  SuiteRow r;
  r.id = s.column_int64(0);
  JsonReader::rethrow_in(fmt::format("results database {}, suite {}", db.string(), r.id),
                         [&] { read_record(s, 1, r.info); });
  return r;
}

std::string this_host() {
  const std::string name = profiler::host_name();
  return name.empty() ? "?" : name;
}

}  // namespace

std::string ResultsDb::select_list(std::string_view table,
                                   const std::vector<ColumnDef>& columns) const {
  const auto& existing = existing_columns_.at(std::string(table));
  std::vector<std::string> names;
  for (const auto& c : columns) names.push_back(existing.contains(c.name) ? c.name : "NULL");
  return fmt::format("{}", fmt::join(names, ", "));
}

// ---------------------------------------------------------------------------
// Opening.

ResultsDb::ResultsDb(std::unique_ptr<Connection> db, bool writable)
    : db_(std::move(db)), writable_(writable), existing_columns_(existing_columns(*db_)) {}
ResultsDb::ResultsDb(ResultsDb&&) noexcept = default;
ResultsDb& ResultsDb::operator=(ResultsDb&&) noexcept = default;
ResultsDb::~ResultsDb() = default;

std::string db_file_problem(const fs::path& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);  // follows symlinks
  const char* kind = fs::is_fifo(status)             ? "a FIFO (named pipe)"
                     : fs::is_character_file(status) ? "a character device"
                     : fs::is_block_file(status)     ? "a block device"
                     : fs::is_socket(status)         ? "a socket"
                     : fs::is_directory(status)      ? "a directory"
                                                     : nullptr;
  if (kind == nullptr) return "";
  return fmt::format(
      "{} is {}: a results database must be a regular file (SQLite writes "
      "its journal beside it and reads it by offset)",
      path.string(), kind);
}

namespace {
void refuse_special_file(const fs::path& path) {
  if (const std::string why = db_file_problem(path); !why.empty()) {
    throw Error("results database " + why);
  }
}
}  // namespace

ResultsDb ResultsDb::open_for_writing(const fs::path& path, DbOptions options) {
  refuse_special_file(path);
  auto db =
      std::make_unique<Connection>(path, Connection::Mode::kReadWrite, options.busy_timeout_ms);
  // First touch of the file: refuses garbage and newer schemas before any
  // write (journal mode, migration) is attempted.
  check_schema_compatible(*db);
  db->exec("PRAGMA foreign_keys = ON", "enabling foreign keys");
  std::string journal = db->query_text("PRAGMA journal_mode = WAL", "enabling WAL");
  if (journal != "wal") {
    throw Error(fmt::format(
        "results database {}: cannot use the WAL journal (got '{}'); keep it on a local disk",
        path.string(), journal));
  }
  // FULL: a committed run survives a power cut, not only a crash; commits
  // are few (one per case) so the fsyncs cost nothing that matters.
  db->exec("PRAGMA synchronous = FULL", "setting synchronous mode");
  migrate(*db);
  return ResultsDb(std::move(db), true);
}

ResultsDb ResultsDb::open_for_reading(const fs::path& path, DbOptions options) {
  refuse_special_file(path);
  auto db =
      std::make_unique<Connection>(path, Connection::Mode::kReadOnly, options.busy_timeout_ms);
  check_schema_compatible(*db);
  int version = results::schema_version(*db);
  if (version == 0) {
    throw Error(
        fmt::format("{} is not a trainscope results database (it is empty)", path.string()));
  }
  if (version < kSchemaVersion) {
    throw Error(fmt::format(
        "database {} has schema version {}, older than this trainscope ({}); open it for "
        "writing once (e.g. run a suite) to migrate it",
        path.string(), version, kSchemaVersion));
  }
  return ResultsDb(std::move(db), false);
}

ResultsDb::Snapshot::Snapshot(Connection& db)
    : transaction_(std::make_unique<sqlite::ReadTransaction>(db)) {}
ResultsDb::Snapshot::~Snapshot() = default;

ResultsDb::Snapshot ResultsDb::snapshot() { return Snapshot(*db_); }

const fs::path& ResultsDb::path() const { return db_->path(); }

int ResultsDb::schema_version() { return results::schema_version(*db_); }

std::string ResultsDb::integrity_check() {
  Statement s(*db_, "PRAGMA integrity_check");
  std::string result;
  while (s.step("checking integrity")) {
    if (!result.empty()) result += "\n";
    result += s.column_text(0);
  }
  return result;
}

void ResultsDb::require_writable() const {
  TS_CHECK(writable_) << "write to results database " << db_->path()
                      << " opened with open_for_reading";
}

// ---------------------------------------------------------------------------
// Writer.

int64_t ResultsDb::begin_suite(const SuiteInfo& info) {
  require_writable();
  Transaction t(*db_);
  SuiteInfo row = info;
  row.started_at = utc_timestamp();
  row.finished_at.reset();

  Statement s(*db_, insert_sql("suites", {}, columns_of<SuiteInfo>()));
  bind_record(s, 1, row);
  s.run(fmt::format("recording suite '{}'", info.name));
  int64_t id = db_->last_insert_rowid();
  t.commit();
  return id;
}

void ResultsDb::finish_suite(int64_t suite_id) {
  require_writable();
  Transaction t(*db_);
  Statement s(*db_, "UPDATE suites SET finished_at = ?1 WHERE id = ?2");
  s.bind(1, utc_timestamp()).bind(2, suite_id);
  s.run(fmt::format("finishing suite {}", suite_id));
  if (db_->changes() != 1) {
    throw Error(fmt::format("results database {} has no suite {}", path().string(), suite_id));
  }
  t.commit();
}

namespace {

// Inserts a new run of the suite, recorded by this process; returns its id.
int64_t insert_run(Connection& db, int64_t suite_id, RunRow row) {
  row.runner_pid = ::getpid();
  row.runner_host = this_host();
  row.runner_identity = profiler::process_identity(::getpid());
  Statement s(db, insert_sql("runs", keys({"suite_id"}), columns_of<RunRow>()));
  bind_record(s.bind(1, suite_id), 2, row);
  s.run(fmt::format("recording case '{}'", row.run_case.case_name));
  return db.last_insert_rowid();
}

}  // namespace

int64_t ResultsDb::begin_run(int64_t suite_id, const RunCase& run_case) {
  require_writable();
  Transaction t(*db_);
  if (!suite(suite_id)) {
    throw Error(fmt::format("results database {} has no suite {}", path().string(), suite_id));
  }
  RunRow row{.run_case = run_case, .status = RunStatus::kRunning, .started_at = utc_timestamp()};
  const int64_t id = insert_run(*db_, suite_id, row);
  t.commit();
  return id;
}

void ResultsDb::finish_run(int64_t run_id, RunStatus status, int exit_code, std::string_view error,
                           const RunSummary* summary) {
  require_writable();
  TS_CHECK(status == RunStatus::kOk || status == RunStatus::kFailed)
      << "finish_run status must be ok or failed, got " << to_string(status);
  Transaction t(*db_);
  std::optional<RunRow> existing = run(run_id);
  if (!existing) {
    throw Error(fmt::format("results database {} has no run {}", path().string(), run_id));
  }
  if (existing->status != RunStatus::kRunning) {
    throw Error(fmt::format("run {} in results database {} is already finished (status {})", run_id,
                            path().string(), to_string(existing->status)));
  }
  const auto summary_columns = columns_of<RunSummary>({.nullable = true});
  std::vector<std::string> assignments;
  for (size_t i = 0; i < summary_columns.size(); ++i) {
    assignments.push_back(fmt::format("{} = ?{}", summary_columns[i].name, i + 5));
  }
  Statement update(*db_, fmt::format("UPDATE runs SET status = ?1, exit_code = ?2, error = ?3, "
                                     "finished_at = ?4, {} WHERE id = ?{}",
                                     fmt::join(assignments, ", "), summary_columns.size() + 5));
  update.bind(1, to_string(status)).bind(2, exit_code).bind(3, error).bind(4, utc_timestamp());
  if (summary) bind_record(update, 5, *summary);  // else NULL: no summary
  update.bind(static_cast<int>(summary_columns.size()) + 5, run_id);
  update.run(fmt::format("finishing run {}", run_id));
  if (summary) insert_summary_rows(*db_, run_id, *summary);
  t.commit();
}

namespace {

// Whether the runner a run recorded is gone. Runs from before runner
// records have none: their runner cannot be asked, so it counts as gone.
bool runner_gone(const RunRow& runner) {
  if (runner.runner_pid <= 0 || runner.runner_host.empty()) return true;
  if (runner.runner_host != this_host()) return false;  // cannot be told from here
  return profiler::process_identity(static_cast<pid_t>(runner.runner_pid)) !=
         runner.runner_identity;
}

}  // namespace

int ResultsDb::mark_stale_running_failed(std::string_view reason) {
  require_writable();
  Transaction t(*db_);
  std::vector<int64_t> stale;
  for (const RunRow& row : running_runs()) {
    if (runner_gone(row)) stale.push_back(row.id);
  }
  Statement s(*db_,
              "UPDATE runs SET status = 'failed', error = ?1, finished_at = ?2 "
              "WHERE id = ?3 AND status = 'running'");
  for (int64_t run_id : stale) {
    s.bind(1, reason).bind(2, utc_timestamp()).bind(3, run_id);
    s.run("marking runs of a runner that died failed");
  }
  t.commit();
  return static_cast<int>(stale.size());
}

int64_t ResultsDb::mark_skipped(int64_t suite_id, const RunCase& run_case,
                                std::string_view reason) {
  require_writable();
  Transaction t(*db_);
  if (!suite(suite_id)) {
    throw Error(fmt::format("results database {} has no suite {}", path().string(), suite_id));
  }
  const std::string now = utc_timestamp();
  RunRow row{.run_case = run_case,
             .status = RunStatus::kSkipped,
             .error = std::string(reason),
             .started_at = now,
             .finished_at = now};
  const int64_t id = insert_run(*db_, suite_id, row);
  t.commit();
  return id;
}

namespace {

// Inserts `rows` as rows of `table` belonging to run `run_id`.
template <typename Row>
void insert_run_rows(Connection& db, const fs::path& path, std::string_view table, int64_t run_id,
                     std::span<const Row> rows, std::string_view what) {
  Transaction t(db);
  Statement exists(db, "SELECT 1 FROM runs WHERE id = ?1");
  if (!exists.bind(1, run_id).step(fmt::format("reading run {}", run_id))) {
    throw Error(fmt::format("results database {} has no run {}", path.string(), run_id));
  }
  Statement s(db, insert_sql(table, keys({"run_id"}), columns_of<Row>()));
  for (const Row& row : rows) {
    bind_record(s.bind(1, run_id), 2, row);
    s.run(fmt::format("storing {} of run {}", what, run_id));
  }
  t.commit();
}

}  // namespace

void ResultsDb::add_poller_samples(int64_t run_id, std::span<const ProcessSample> samples) {
  require_writable();
  insert_run_rows(*db_, path(), "poller_samples", run_id, samples, "poller samples");
}

void ResultsDb::add_allreduce_rows(int64_t run_id, std::span<const AllReduceRow> rows) {
  require_writable();
  insert_run_rows(*db_, path(), "allreduce_rows", run_id, rows, "all-reduce rows");
}

void ResultsDb::add_machine_limits(std::optional<int64_t> suite_id,
                                   std::span<const MachineLimit> limits) {
  require_writable();
  Transaction t(*db_);
  if (suite_id && !suite(*suite_id)) {
    throw Error(fmt::format("results database {} has no suite {}", path().string(), *suite_id));
  }
  Statement s(*db_, insert_sql("machine_limits", keys({"suite_id"}), columns_of<MachineLimit>()));
  for (const MachineLimit& limit : limits) {
    bind_record(s.bind(1, suite_id), 2, limit);
    s.run(fmt::format("storing the limit {}", describe_key(limit)));
  }
  t.commit();
}

// ---------------------------------------------------------------------------
// Reader.

namespace {

// Every row `sql` selects with `run_id` bound to ?1, read by `read`.
template <typename Row, typename Read>
std::vector<Row> select_rows(Connection& db, const std::string& sql, int64_t run_id,
                             std::string_view what, Read&& read) {
  Statement s(db, sql);
  s.bind(1, run_id);
  std::vector<Row> rows;
  while (s.step(fmt::format("reading {} of run {}", what, run_id))) read(s, rows.emplace_back());
  return rows;
}

}  // namespace

std::vector<SuiteRow> ResultsDb::list_suites() {
  Statement s(*db_, fmt::format("SELECT id, {} FROM suites ORDER BY started_at DESC, id DESC",
                                select_list("suites", columns_of<SuiteInfo>())));
  std::vector<SuiteRow> rows;
  while (s.step("listing suites")) rows.push_back(read_suite_row(s, path()));
  return rows;
}

std::optional<int64_t> ResultsDb::latest_suite_id() {
  Statement s(*db_, "SELECT id FROM suites ORDER BY started_at DESC, id DESC LIMIT 1");
  if (!s.step("finding the latest suite")) return std::nullopt;
  return s.column_int64(0);
}

std::optional<SuiteRow> ResultsDb::suite(int64_t suite_id) {
  Statement s(*db_, fmt::format("SELECT id, {} FROM suites WHERE id = ?1",
                                select_list("suites", columns_of<SuiteInfo>())));
  s.bind(1, suite_id);
  if (!s.step(fmt::format("reading suite {}", suite_id))) return std::nullopt;
  return read_suite_row(s, path());
}

namespace {
constexpr std::string_view kRunsSelect =
    "SELECT id, suite_id, {}, summary_schema IS NOT NULL, {} FROM runs";
}

std::vector<RunRow> ResultsDb::running_runs() {
  Statement s(*db_, fmt::format(fmt::runtime(std::string(kRunsSelect) +
                                             " WHERE status = 'running' ORDER BY id"),
                                select_list("runs", columns_of<RunRow>()),
                                select_list("runs", columns_of<Totals>())));
  std::vector<RunRow> rows;
  while (s.step("finding running runs")) rows.push_back(read_run_row(s, path()));
  return rows;
}

std::vector<RunRow> ResultsDb::list_runs(int64_t suite_id) {
  Statement s(
      *db_, fmt::format(fmt::runtime(std::string(kRunsSelect) + " WHERE suite_id = ?1 ORDER BY id"),
                        select_list("runs", columns_of<RunRow>()),
                        select_list("runs", columns_of<Totals>())));
  s.bind(1, suite_id);
  std::vector<RunRow> rows;
  while (s.step(fmt::format("listing runs of suite {}", suite_id))) {
    rows.push_back(read_run_row(s, path()));
  }
  return rows;
}

std::optional<RunRow> ResultsDb::run(int64_t run_id) {
  Statement s(*db_, fmt::format(fmt::runtime(std::string(kRunsSelect) + " WHERE id = ?1"),
                                select_list("runs", columns_of<RunRow>()),
                                select_list("runs", columns_of<Totals>())));
  s.bind(1, run_id);
  if (!s.step(fmt::format("reading run {}", run_id))) return std::nullopt;
  return read_run_row(s, path());
}

std::vector<RankResult> ResultsDb::rank_results(int64_t run_id) {
  auto rows = select_rows<RankResult>(
      *db_,
      fmt::format("SELECT {} FROM rank_results WHERE run_id = ?1 ORDER BY rank",
                  select_list("rank_results", columns_of<RankResult>())),
      run_id, "rank results", [](Statement& s, RankResult& r) { read_record(s, 0, r); });
  Statement phase(*db_,
                  fmt::format("SELECT phase, {} FROM rank_phase_stats WHERE run_id = ?1 "
                              "AND rank = ?2",
                              select_list("rank_phase_stats", columns_of<TimeStats>(kSeconds))));
  for (RankResult& r : rows) {
    phase.bind(1, run_id).bind(2, r.rank);
    while (phase.step(fmt::format("reading phase stats of run {}", run_id))) {
      Phase p{};
      int column = 0;
      SqlCodec<Phase>::read(phase, column, p, {});
      read_record(phase, column, r.phases[p]);
    }
    phase.reset();
  }
  return rows;
}

std::vector<StepRow> ResultsDb::steps(int64_t run_id) {
  return select_rows<StepRow>(
      *db_,
      fmt::format("SELECT rank, {} FROM steps WHERE run_id = ?1 ORDER BY rank, step",
                  select_list("steps", columns_of<StepRecord>())),
      run_id, "steps", [](Statement& s, StepRow& row) {
        row.rank = static_cast<int>(s.column_int64(0));
        read_record(s, 1, row.record);
      });
}

std::vector<StepRecord> ResultsDb::steps(int64_t run_id, int rank) {
  std::vector<StepRecord> out;
  for (StepRow& row : steps(run_id)) {
    if (row.rank == rank) out.push_back(std::move(row.record));
  }
  return out;
}

std::vector<ValLoss> ResultsDb::val_losses(int64_t run_id) {
  return select_rows<ValLoss>(
      *db_,
      fmt::format("SELECT {} FROM val_losses WHERE run_id = ?1 ORDER BY step",
                  select_list("val_losses", columns_of<ValLoss>())),
      run_id, "validation losses", [](Statement& s, ValLoss& v) { read_record(s, 0, v); });
}

std::vector<ProcessSample> ResultsDb::poller_samples(int64_t run_id) {
  return select_rows<ProcessSample>(
      *db_,
      fmt::format("SELECT {} FROM poller_samples WHERE run_id = ?1 ORDER BY t_s, id",
                  select_list("poller_samples", columns_of<ProcessSample>())),
      run_id, "poller samples", [](Statement& s, ProcessSample& p) { read_record(s, 0, p); });
}

std::vector<AllReduceRow> ResultsDb::allreduce_rows(int64_t run_id) {
  return select_rows<AllReduceRow>(
      *db_,
      fmt::format("SELECT {} FROM allreduce_rows WHERE run_id = ?1 ORDER BY size_bytes, id",
                  select_list("allreduce_rows", columns_of<AllReduceRow>())),
      run_id, "all-reduce rows", [](Statement& s, AllReduceRow& r) { read_record(s, 0, r); });
}

std::vector<MachineLimit> ResultsDb::machine_limits(std::optional<int64_t> suite_id) {
  if (existing_columns_.at("machine_limits").empty()) return {};  // made before limits
  Statement s(*db_, fmt::format("SELECT {} FROM machine_limits WHERE {} "
                                "ORDER BY measured_at DESC, id DESC",
                                select_list("machine_limits", columns_of<MachineLimit>()),
                                suite_id ? "suite_id = ?1" : "suite_id IS NULL"));
  if (suite_id) s.bind(1, *suite_id);
  std::vector<MachineLimit> rows;
  while (s.step("reading machine limits")) {
    JsonReader::rethrow_in(fmt::format("results database {}, machine_limits", path().string()),
                           [&] { read_record(s, 0, rows.emplace_back()); });
  }
  return rows;
}

std::optional<RunSummary> ResultsDb::run_summary(int64_t run_id) {
  Statement s(*db_, fmt::format("SELECT {} FROM runs WHERE id = ?1 AND summary_schema IS NOT NULL",
                                select_list("runs", columns_of<RunSummary>({.nullable = true}))));
  s.bind(1, run_id);
  if (!s.step(fmt::format("reading the summary of run {}", run_id))) return std::nullopt;
  RunSummary summary;
  JsonReader::rethrow_in(fmt::format("results database {}, run {}", path().string(), run_id),
                         [&] { read_record(s, 0, summary); });
  for (StepRow& row : steps(run_id)) {
    if (row.rank < 0 || static_cast<size_t>(row.rank) >= summary.steps.size()) {
      throw Error(
          fmt::format("results database {}, run {}: a step row of rank {}, but the run "
                      "has {} step list(s)",
                      path().string(), run_id, row.rank, summary.steps.size()));
    }
    summary.steps[row.rank].push_back(std::move(row.record));
  }
  summary.val = val_losses(run_id);
  summary.ranks = rank_results(run_id);
  return summary;
}

}  // namespace trainscope::results
