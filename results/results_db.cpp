#include "results/results_db.h"

#include <array>
#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "kernels/check.h"
#include "results/schema.h"
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
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000);
}

namespace {

using profiler::kPhaseNames;

// kUnknown (-1) is stored as NULL so that SQL aggregates skip it.
std::optional<int64_t> known(int64_t value) {
  return value == kUnknown ? std::nullopt : std::optional<int64_t>(value);
}

std::optional<int> optional_int(Statement& s, int column) {
  auto v = s.column_optional_int64(column);
  return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
}

RunStatus status_column(Statement& s, int column) {
  auto status = parse_run_status(s.column_text(column));
  TS_CHECK(status.has_value()) << "bad status in runs table (the CHECK constraint should prevent it)";
  return *status;
}

constexpr std::string_view kRunColumns =
    "id, suite_id, case_name, config, mode, reduction, bucket_mb, world_size, threads, "
    "transport, links, launcher_command, repetition, status, exit_code, error, started_at, "
    "finished_at, summary_schema IS NOT NULL, tokens_per_s, step_time_median_s, step_time_p95_s";

RunRow read_run_row(Statement& s) {
  RunRow r;
  r.id = s.column_int64(0);
  r.suite_id = s.column_int64(1);
  r.run_case.case_name = s.column_text(2);
  r.run_case.config = json::parse(s.column_text(3));
  r.run_case.mode = s.column_text(4);
  r.run_case.reduction = s.column_text(5);
  if (!s.is_null(6)) r.run_case.bucket_mb = s.column_double(6);
  r.run_case.world_size = static_cast<int>(s.column_int64(7));
  r.run_case.threads = static_cast<int>(s.column_int64(8));
  r.run_case.transport = json::parse(s.column_text(9));
  r.run_case.links = s.column_text(10);
  r.run_case.launcher_command = s.column_text(11);
  r.run_case.repetition = static_cast<int>(s.column_int64(12));
  r.status = status_column(s, 13);
  r.exit_code = optional_int(s, 14);
  r.error = s.column_text(15);
  r.started_at = s.column_text(16);
  r.finished_at = s.column_optional_text(17);
  r.has_summary = s.column_int64(18) != 0;
  r.totals = {s.column_double(19), s.column_double(20), s.column_double(21)};
  return r;
}

constexpr std::string_view kSuiteColumns =
    "id, name, definition, started_at, finished_at, git_revision, host_facts, environment, "
    "command_line";

SuiteRow read_suite_row(Statement& s) {
  SuiteRow r;
  r.id = s.column_int64(0);
  r.info.name = s.column_text(1);
  r.info.definition = s.column_text(2);
  r.started_at = s.column_text(3);
  r.finished_at = s.column_optional_text(4);
  r.info.git_revision = s.column_text(5);
  r.info.host_facts = json::parse(s.column_text(6));
  r.info.environment = json::parse(s.column_text(7));
  r.info.command_line = s.column_text(8);
  return r;
}

void bind_run_case(Statement& s, int64_t suite_id, const RunCase& c) {
  s.bind(1, suite_id)
      .bind(2, c.case_name)
      .bind(3, c.config.dump())
      .bind(4, c.mode)
      .bind(5, c.reduction)
      .bind(6, c.bucket_mb)
      .bind(7, c.world_size)
      .bind(8, c.threads)
      .bind(9, c.transport.dump())
      .bind(10, c.links)
      .bind(11, c.launcher_command)
      .bind(12, c.repetition);
}

constexpr std::string_view kInsertRun =
    "INSERT INTO runs (suite_id, case_name, config, mode, reduction, bucket_mb, world_size, "
    "threads, transport, links, launcher_command, repetition, status, error, started_at, "
    "finished_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)";

void insert_summary_rows(Connection& db, int64_t run_id, const RunSummary& summary) {
  Statement rank(db,
                 "INSERT INTO rank_results VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                 "?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, "
                 "?28, ?29, ?30)");
  Statement phase(db, "INSERT INTO rank_phase_stats VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  for (const RankResult& r : summary.ranks) {
    const auto& c = r.tracked_peak_by_category;
    rank.bind(1, run_id).bind(2, r.rank).bind(3, r.host).bind(4, r.pid).bind(5, r.tokens_per_s);
    rank.bind(6, r.step_time.mean).bind(7, r.step_time.median).bind(8, r.step_time.p95);
    rank.bind(9, r.step_time.min).bind(10, r.step_time.max).bind(11, r.tracked_peak_total);
    rank.bind(12, c.parameters).bind(13, c.gradients).bind(14, c.optimizer_state);
    rank.bind(15, c.activations).bind(16, c.data).bind(17, c.comm).bind(18, c.workspace);
    rank.bind(19, c.other).bind(20, known(r.vm_hwm)).bind(21, known(r.vm_rss));
    rank.bind(22, known(r.pss)).bind(23, r.data.examples_held).bind(24, r.data.tokens_held);
    rank.bind(25, r.data.bytes_held).bind(26, r.data.bytes_read).bind(27, r.comm.calls);
    rank.bind(28, r.comm.bytes).bind(29, r.comm.time_s).bind(30, r.comm.exposed_s);
    rank.run(fmt::format("storing results of rank {} of run {}", r.rank, run_id));
    PhaseStats phases = r.phases;
    auto members = phase_members(phases);
    for (size_t i = 0; i < members.size(); ++i) {
      const TimeStats& t = *members[i];
      phase.bind(1, run_id).bind(2, r.rank).bind(3, kPhaseNames[i]).bind(4, t.mean);
      phase.bind(5, t.median).bind(6, t.p95).bind(7, t.min).bind(8, t.max);
      phase.run(fmt::format("storing {} phase stats of rank {} of run {}", kPhaseNames[i],
                            r.rank, run_id));
    }
  }

  Statement step(db,
                 "INSERT INTO steps VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                 "?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)");
  for (size_t rank_index = 0; rank_index < summary.steps.size(); ++rank_index) {
    for (const StepRecord& s : summary.steps[rank_index]) {
      step.bind(1, run_id).bind(2, static_cast<int64_t>(rank_index)).bind(3, s.step);
      step.bind(4, s.loss).bind(5, s.lr).bind(6, s.grad_norm).bind(7, s.tokens);
      step.bind(8, s.step_time_s).bind(9, s.phases.data).bind(10, s.phases.forward);
      step.bind(11, s.phases.backward).bind(12, s.phases.comm).bind(13, s.phases.optimizer);
      step.bind(14, s.phases.eval).bind(15, s.phases.checkpoint).bind(16, s.comm_calls);
      step.bind(17, s.comm_bytes).bind(18, s.comm_exposed_s).bind(19, s.mem_active);
      step.bind(20, s.mem_peak);
      step.run(fmt::format("storing step {} of rank {} of run {}", s.step, rank_index, run_id));
    }
  }

  Statement val(db, "INSERT INTO val_losses VALUES (?1, ?2, ?3)");
  for (const ValLoss& v : summary.val) {
    val.bind(1, run_id).bind(2, v.step).bind(3, v.loss);
    val.run(fmt::format("storing validation loss at step {} of run {}", v.step, run_id));
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Opening.

ResultsDb::ResultsDb(std::unique_ptr<Connection> db, bool writable)
    : db_(std::move(db)), writable_(writable) {}
ResultsDb::ResultsDb(ResultsDb&&) noexcept = default;
ResultsDb& ResultsDb::operator=(ResultsDb&&) noexcept = default;
ResultsDb::~ResultsDb() = default;

ResultsDb ResultsDb::open_for_writing(const fs::path& path, DbOptions options) {
  auto db = std::make_unique<Connection>(path, Connection::Mode::kReadWrite,
                                         options.busy_timeout_ms);
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
  auto db = std::make_unique<Connection>(path, Connection::Mode::kReadOnly,
                                         options.busy_timeout_ms);
  check_schema_compatible(*db);
  int version = results::schema_version(*db);
  if (version == 0) {
    throw Error(fmt::format("{} is not a trainscope results database (it is empty)",
                            path.string()));
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
  Statement s(*db_,
              "INSERT INTO suites (name, definition, started_at, git_revision, host_facts, "
              "environment, command_line) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  s.bind(1, info.name).bind(2, info.definition).bind(3, utc_timestamp());
  s.bind(4, info.git_revision).bind(5, info.host_facts.dump()).bind(6, info.environment.dump());
  s.bind(7, info.command_line);
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

int64_t ResultsDb::begin_run(int64_t suite_id, const RunCase& run_case) {
  require_writable();
  Transaction t(*db_);
  if (!suite(suite_id)) {
    throw Error(fmt::format("results database {} has no suite {}", path().string(), suite_id));
  }
  Statement s(*db_, kInsertRun);
  bind_run_case(s, suite_id, run_case);
  s.bind(13, to_string(RunStatus::kRunning)).bind(14, "").bind(15, utc_timestamp()).bind_null(16);
  s.run(fmt::format("recording the start of case '{}'", run_case.case_name));
  int64_t id = db_->last_insert_rowid();
  t.commit();
  return id;
}

void ResultsDb::finish_run(int64_t run_id, RunStatus status, int exit_code,
                           std::string_view error, const RunSummary* summary) {
  require_writable();
  TS_CHECK(status == RunStatus::kOk || status == RunStatus::kFailed)
      << "finish_run status must be ok or failed, got " << to_string(status);
  Transaction t(*db_);
  std::optional<RunRow> existing = run(run_id);
  if (!existing) {
    throw Error(fmt::format("results database {} has no run {}", path().string(), run_id));
  }
  if (existing->status != RunStatus::kRunning) {
    throw Error(fmt::format("run {} in results database {} is already finished (status {})",
                            run_id, path().string(), to_string(existing->status)));
  }
  Statement update(
      *db_,
      "UPDATE runs SET status = ?1, exit_code = ?2, error = ?3, finished_at = ?4, "
      "summary_schema = ?5, trainscope_version = ?6, git_revision = ?7, model = ?8, "
      "options = ?9, summary_world_size = ?10, threads_per_rank = ?11, hosts = ?12, "
      "summary_transport = ?13, transport_per_rank = ?14, summary_status = ?15, "
      "summary_error = ?16, failed_step = ?17, step_lists = ?18, tokens_per_s = ?19, "
      "step_time_median_s = ?20, step_time_p95_s = ?21 WHERE id = ?22");
  update.bind(1, to_string(status)).bind(2, exit_code).bind(3, error).bind(4, utc_timestamp());
  if (summary) {
    const RunSummary& s = *summary;
    update.bind(5, s.schema).bind(6, s.trainscope_version).bind(7, s.git_revision);
    update.bind(8, s.model.dump()).bind(9, s.options.dump()).bind(10, s.world_size);
    update.bind(11, s.threads_per_rank).bind(12, json(s.hosts).dump());
    update.bind(13, json(s.transport).dump()).bind(14, json(s.transport_per_rank).dump());
    update.bind(15, to_string(s.status)).bind(16, s.error).bind(17, s.failed_step);
    update.bind(18, static_cast<int64_t>(s.steps.size())).bind(19, s.totals.tokens_per_s);
    update.bind(20, s.totals.step_time_median_s).bind(21, s.totals.step_time_p95_s);
  }
  update.bind(22, run_id);
  update.run(fmt::format("finishing run {}", run_id));
  if (summary) insert_summary_rows(*db_, run_id, *summary);
  t.commit();
}

int ResultsDb::mark_stale_running_failed(std::string_view reason) {
  require_writable();
  Transaction t(*db_);
  Statement s(*db_,
              "UPDATE runs SET status = 'failed', error = ?1, finished_at = ?2 "
              "WHERE status = 'running'");
  s.bind(1, reason).bind(2, utc_timestamp());
  s.run("marking stale running runs failed");
  int count = static_cast<int>(db_->changes());
  t.commit();
  return count;
}

int64_t ResultsDb::mark_skipped(int64_t suite_id, const RunCase& run_case,
                                std::string_view reason) {
  require_writable();
  Transaction t(*db_);
  if (!suite(suite_id)) {
    throw Error(fmt::format("results database {} has no suite {}", path().string(), suite_id));
  }
  std::string now = utc_timestamp();
  Statement s(*db_, kInsertRun);
  bind_run_case(s, suite_id, run_case);
  s.bind(13, to_string(RunStatus::kSkipped)).bind(14, reason).bind(15, now).bind(16, now);
  s.run(fmt::format("recording skipped case '{}'", run_case.case_name));
  int64_t id = db_->last_insert_rowid();
  t.commit();
  return id;
}

void ResultsDb::add_poller_samples(int64_t run_id, std::span<const PollerSample> samples) {
  require_writable();
  Transaction t(*db_);
  if (!run(run_id)) {
    throw Error(fmt::format("results database {} has no run {}", path().string(), run_id));
  }
  Statement s(*db_,
              "INSERT INTO poller_samples (run_id, t_s, pid, ppid, role, rank, rss_bytes, "
              "pss_bytes, command) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  for (const PollerSample& p : samples) {
    s.bind(1, run_id).bind(2, p.t_s).bind(3, p.pid).bind(4, p.ppid).bind(5, p.role);
    if (p.rank >= 0) s.bind(6, p.rank); else s.bind_null(6);
    s.bind(7, p.rss_bytes).bind(8, known(p.pss_bytes)).bind(9, p.command);
    s.run(fmt::format("storing poller samples of run {}", run_id));
  }
  t.commit();
}

void ResultsDb::add_allreduce_rows(int64_t run_id, std::span<const AllReduceRow> rows) {
  require_writable();
  Transaction t(*db_);
  if (!run(run_id)) {
    throw Error(fmt::format("results database {} has no run {}", path().string(), run_id));
  }
  Statement s(*db_,
              "INSERT INTO allreduce_rows (run_id, transport, links, world_size, size_bytes, "
              "count, dtype, redop, time_us, algbw_gbps, busbw_gbps, wrong) VALUES (?1, ?2, ?3, "
              "?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
  for (const AllReduceRow& r : rows) {
    s.bind(1, run_id).bind(2, r.transport).bind(3, r.links).bind(4, r.world_size);
    s.bind(5, r.size_bytes).bind(6, r.count).bind(7, r.dtype).bind(8, r.redop);
    s.bind(9, r.time_us).bind(10, r.algbw_gbps).bind(11, r.busbw_gbps).bind(12, r.wrong);
    s.run(fmt::format("storing all-reduce rows of run {}", run_id));
  }
  t.commit();
}

// ---------------------------------------------------------------------------
// Reader.

std::vector<SuiteRow> ResultsDb::list_suites() {
  Statement s(*db_, fmt::format("SELECT {} FROM suites ORDER BY started_at DESC, id DESC",
                                kSuiteColumns));
  std::vector<SuiteRow> rows;
  while (s.step("listing suites")) rows.push_back(read_suite_row(s));
  return rows;
}

std::optional<int64_t> ResultsDb::latest_suite_id() {
  Statement s(*db_, "SELECT id FROM suites ORDER BY started_at DESC, id DESC LIMIT 1");
  if (!s.step("finding the latest suite")) return std::nullopt;
  return s.column_int64(0);
}

std::optional<SuiteRow> ResultsDb::suite(int64_t suite_id) {
  Statement s(*db_, fmt::format("SELECT {} FROM suites WHERE id = ?1", kSuiteColumns));
  s.bind(1, suite_id);
  if (!s.step(fmt::format("reading suite {}", suite_id))) return std::nullopt;
  return read_suite_row(s);
}

std::vector<RunRow> ResultsDb::list_runs(int64_t suite_id) {
  Statement s(*db_,
              fmt::format("SELECT {} FROM runs WHERE suite_id = ?1 ORDER BY id", kRunColumns));
  s.bind(1, suite_id);
  std::vector<RunRow> rows;
  while (s.step(fmt::format("listing runs of suite {}", suite_id))) rows.push_back(read_run_row(s));
  return rows;
}

std::optional<RunRow> ResultsDb::run(int64_t run_id) {
  Statement s(*db_, fmt::format("SELECT {} FROM runs WHERE id = ?1", kRunColumns));
  s.bind(1, run_id);
  if (!s.step(fmt::format("reading run {}", run_id))) return std::nullopt;
  return read_run_row(s);
}

std::vector<RankResult> ResultsDb::rank_results(int64_t run_id) {
  Statement s(*db_, "SELECT * FROM rank_results WHERE run_id = ?1 ORDER BY rank");
  Statement phase(*db_,
                  "SELECT phase, mean_s, median_s, p95_s, min_s, max_s FROM rank_phase_stats "
                  "WHERE run_id = ?1 AND rank = ?2");
  s.bind(1, run_id);
  std::vector<RankResult> rows;
  auto or_unknown = [&](int column) { return s.column_optional_int64(column).value_or(kUnknown); };
  while (s.step(fmt::format("reading rank results of run {}", run_id))) {
    RankResult r;
    r.rank = static_cast<int>(s.column_int64(1));
    r.host = s.column_text(2);
    r.pid = s.column_int64(3);
    r.tokens_per_s = s.column_double(4);
    r.step_time = {s.column_double(5), s.column_double(6), s.column_double(7),
                   s.column_double(8), s.column_double(9)};
    r.tracked_peak_total = s.column_int64(10);
    r.tracked_peak_by_category = {s.column_int64(11), s.column_int64(12), s.column_int64(13),
                                  s.column_int64(14), s.column_int64(15), s.column_int64(16),
                                  s.column_int64(17), s.column_int64(18)};
    r.vm_hwm = or_unknown(19);
    r.vm_rss = or_unknown(20);
    r.pss = or_unknown(21);
    r.data = {s.column_int64(22), s.column_int64(23), s.column_int64(24), s.column_int64(25)};
    r.comm = {s.column_int64(26), s.column_int64(27), s.column_double(28), s.column_double(29)};
    phase.bind(1, run_id).bind(2, r.rank);
    auto members = phase_members(r.phases);
    while (phase.step(fmt::format("reading phase stats of run {}", run_id))) {
      std::string name = phase.column_text(0);
      for (size_t i = 0; i < members.size(); ++i) {
        if (name == kPhaseNames[i]) {
          *members[i] = {phase.column_double(1), phase.column_double(2), phase.column_double(3),
                         phase.column_double(4), phase.column_double(5)};
        }
      }
    }
    phase.reset();
    rows.push_back(std::move(r));
  }
  return rows;
}

namespace {

constexpr std::string_view kStepColumns =
    "rank, step, loss, lr, grad_norm, tokens, step_time_s, data_s, forward_s, backward_s, "
    "comm_s, optimizer_s, eval_s, checkpoint_s, comm_calls, comm_bytes, comm_exposed_s, "
    "mem_active, mem_peak";

StepRow read_step_row(Statement& s) {
  StepRow row;
  row.rank = static_cast<int>(s.column_int64(0));
  StepRecord& r = row.record;
  r.step = s.column_int64(1);
  r.loss = s.column_double(2);
  r.lr = s.column_double(3);
  r.grad_norm = s.column_double(4);
  r.tokens = s.column_int64(5);
  r.step_time_s = s.column_double(6);
  r.phases = {s.column_double(7),  s.column_double(8),  s.column_double(9), s.column_double(10),
              s.column_double(11), s.column_double(12), s.column_double(13)};
  r.comm_calls = s.column_int64(14);
  r.comm_bytes = s.column_int64(15);
  r.comm_exposed_s = s.column_double(16);
  r.mem_active = s.column_int64(17);
  r.mem_peak = s.column_int64(18);
  return row;
}

}  // namespace

std::vector<StepRow> ResultsDb::steps(int64_t run_id) {
  Statement s(*db_, fmt::format("SELECT {} FROM steps WHERE run_id = ?1 ORDER BY rank, step",
                                kStepColumns));
  s.bind(1, run_id);
  std::vector<StepRow> rows;
  while (s.step(fmt::format("reading steps of run {}", run_id))) rows.push_back(read_step_row(s));
  return rows;
}

std::vector<StepRecord> ResultsDb::steps(int64_t run_id, int rank) {
  Statement s(*db_, fmt::format("SELECT {} FROM steps WHERE run_id = ?1 AND rank = ?2 "
                                "ORDER BY step",
                                kStepColumns));
  s.bind(1, run_id).bind(2, rank);
  std::vector<StepRecord> rows;
  while (s.step(fmt::format("reading steps of run {}", run_id))) {
    rows.push_back(read_step_row(s).record);
  }
  return rows;
}

std::vector<ValLoss> ResultsDb::val_losses(int64_t run_id) {
  Statement s(*db_, "SELECT step, loss FROM val_losses WHERE run_id = ?1 ORDER BY step");
  s.bind(1, run_id);
  std::vector<ValLoss> rows;
  while (s.step(fmt::format("reading validation losses of run {}", run_id))) {
    rows.push_back({s.column_int64(0), s.column_double(1)});
  }
  return rows;
}

std::vector<PollerSample> ResultsDb::poller_samples(int64_t run_id) {
  Statement s(*db_,
              "SELECT t_s, pid, ppid, role, rank, rss_bytes, pss_bytes, command FROM "
              "poller_samples WHERE run_id = ?1 ORDER BY t_s, id");
  s.bind(1, run_id);
  std::vector<PollerSample> rows;
  while (s.step(fmt::format("reading poller samples of run {}", run_id))) {
    PollerSample p;
    p.t_s = s.column_double(0);
    p.pid = s.column_int64(1);
    p.ppid = s.column_int64(2);
    p.role = s.column_text(3);
    p.rank = optional_int(s, 4).value_or(-1);
    p.rss_bytes = s.column_int64(5);
    p.pss_bytes = s.column_optional_int64(6).value_or(kUnknown);
    p.command = s.column_text(7);
    rows.push_back(std::move(p));
  }
  return rows;
}

std::vector<AllReduceRow> ResultsDb::allreduce_rows(int64_t run_id) {
  Statement s(*db_,
              "SELECT transport, links, world_size, size_bytes, count, dtype, redop, time_us, "
              "algbw_gbps, busbw_gbps, wrong FROM allreduce_rows WHERE run_id = ?1 "
              "ORDER BY size_bytes, id");
  s.bind(1, run_id);
  std::vector<AllReduceRow> rows;
  while (s.step(fmt::format("reading all-reduce rows of run {}", run_id))) {
    AllReduceRow r;
    r.transport = s.column_text(0);
    r.links = s.column_text(1);
    r.world_size = static_cast<int>(s.column_int64(2));
    r.size_bytes = s.column_int64(3);
    r.count = s.column_int64(4);
    r.dtype = s.column_text(5);
    r.redop = s.column_text(6);
    r.time_us = s.column_double(7);
    r.algbw_gbps = s.column_double(8);
    r.busbw_gbps = s.column_double(9);
    r.wrong = s.column_int64(10);
    rows.push_back(std::move(r));
  }
  return rows;
}

std::optional<RunSummary> ResultsDb::run_summary(int64_t run_id) {
  Statement s(*db_,
              "SELECT summary_schema, trainscope_version, git_revision, model, options, "
              "summary_world_size, threads_per_rank, hosts, summary_transport, "
              "transport_per_rank, summary_status, summary_error, failed_step, step_lists, "
              "tokens_per_s, step_time_median_s, step_time_p95_s FROM runs "
              "WHERE id = ?1 AND summary_schema IS NOT NULL");
  s.bind(1, run_id);
  if (!s.step(fmt::format("reading the summary of run {}", run_id))) return std::nullopt;
  RunSummary summary;
  summary.schema = s.column_text(0);
  summary.trainscope_version = s.column_text(1);
  summary.git_revision = s.column_text(2);
  summary.model = json::parse(s.column_text(3));
  summary.options = json::parse(s.column_text(4));
  summary.world_size = static_cast<int>(s.column_int64(5));
  summary.threads_per_rank = static_cast<int>(s.column_int64(6));
  summary.hosts = json::parse(s.column_text(7)).get<std::vector<std::string>>();
  summary.transport = json::parse(s.column_text(8)).get<std::map<std::string, std::string>>();
  summary.transport_per_rank =
      json::parse(s.column_text(9)).get<std::vector<std::map<std::string, std::string>>>();
  summary.status = status_column(s, 10);
  summary.error = s.column_text(11);
  summary.failed_step = s.column_optional_int64(12);
  summary.steps.resize(static_cast<size_t>(s.column_int64(13)));
  summary.totals = {s.column_double(14), s.column_double(15), s.column_double(16)};
  for (StepRow& row : steps(run_id)) {
    TS_CHECK(row.rank >= 0 && static_cast<size_t>(row.rank) < summary.steps.size())
        << "step row of rank " << row.rank << " outside step_lists of run " << run_id;
    summary.steps[row.rank].push_back(row.record);
  }
  summary.val = val_losses(run_id);
  summary.ranks = rank_results(run_id);
  return summary;
}

}  // namespace trainscope::results
