#include "results/schema.h"

#include <string_view>

#include <fmt/format.h>

#include "kernels/check.h"

namespace trainscope::results {

namespace {

struct Migration {
  int version;  // user_version after this step
  std::string_view sql;
};

// Version 1: the initial schema. Conventions: times are seconds (REAL),
// memory is bytes (INTEGER), timestamps are ISO-8601 UTC text, JSON columns
// are text checked with json_valid. A NULL measurement means unknown or NaN.
constexpr std::string_view kSchemaV1 = R"sql(
CREATE TABLE suites (
  id            INTEGER PRIMARY KEY,
  name          TEXT NOT NULL,
  definition    TEXT NOT NULL,              -- the suite file (TOML) as run
  started_at    TEXT NOT NULL,
  finished_at   TEXT,                       -- NULL while running or if the runner died
  git_revision  TEXT NOT NULL,
  host_facts    TEXT NOT NULL CHECK (json_valid(host_facts)),
  environment   TEXT NOT NULL CHECK (json_valid(environment)),
  command_line  TEXT NOT NULL
);

CREATE TABLE runs (
  id               INTEGER PRIMARY KEY,
  suite_id         INTEGER NOT NULL REFERENCES suites(id) ON DELETE CASCADE,
  case_name        TEXT NOT NULL,
  config           TEXT NOT NULL CHECK (json_valid(config)),
  mode             TEXT NOT NULL,
  reduction        TEXT NOT NULL,
  bucket_mb        REAL,
  world_size       INTEGER NOT NULL,
  threads          INTEGER NOT NULL,
  transport        TEXT NOT NULL CHECK (json_valid(transport)),
  links            TEXT NOT NULL,
  launcher_command TEXT NOT NULL,
  repetition       INTEGER NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('running', 'ok', 'failed', 'skipped')),
  exit_code        INTEGER,
  error            TEXT NOT NULL DEFAULT '',
  started_at       TEXT NOT NULL,
  finished_at      TEXT,
  -- From the run summary; all NULL when the run produced none.
  summary_schema     TEXT,
  trainscope_version TEXT,
  git_revision       TEXT,
  model              TEXT CHECK (model IS NULL OR json_valid(model)),
  options            TEXT CHECK (options IS NULL OR json_valid(options)),
  summary_world_size INTEGER,
  threads_per_rank   INTEGER,
  hosts              TEXT CHECK (hosts IS NULL OR json_valid(hosts)),
  summary_transport  TEXT CHECK (summary_transport IS NULL OR json_valid(summary_transport)),
  transport_per_rank TEXT CHECK (transport_per_rank IS NULL OR json_valid(transport_per_rank)),
  summary_status     TEXT CHECK (summary_status IS NULL OR summary_status IN ('ok', 'failed')),
  summary_error      TEXT,
  failed_step        INTEGER,
  step_lists         INTEGER,               -- number of per-rank step lists in the summary
  tokens_per_s       REAL,
  step_time_median_s REAL,
  step_time_p95_s    REAL
);
CREATE INDEX runs_suite_id ON runs(suite_id);
CREATE INDEX runs_status ON runs(status);

CREATE TABLE rank_results (
  run_id                INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank                  INTEGER NOT NULL,
  host                  TEXT NOT NULL,
  pid                   INTEGER NOT NULL,
  tokens_per_s          REAL,
  step_time_mean_s      REAL,
  step_time_median_s    REAL,
  step_time_p95_s       REAL,
  step_time_min_s       REAL,
  step_time_max_s       REAL,
  tracked_peak_total    INTEGER NOT NULL,
  peak_parameters       INTEGER NOT NULL,
  peak_gradients        INTEGER NOT NULL,
  peak_optimizer_state  INTEGER NOT NULL,
  peak_activations      INTEGER NOT NULL,
  peak_data             INTEGER NOT NULL,
  peak_comm             INTEGER NOT NULL,
  peak_workspace        INTEGER NOT NULL,
  peak_other            INTEGER NOT NULL,
  vm_hwm                INTEGER,            -- NULL: unknown
  vm_rss                INTEGER,
  pss                   INTEGER,
  data_examples_held    INTEGER NOT NULL,
  data_tokens_held      INTEGER NOT NULL,
  data_bytes_held       INTEGER NOT NULL,
  data_bytes_read       INTEGER NOT NULL,
  comm_calls            INTEGER NOT NULL,
  comm_bytes            INTEGER NOT NULL,
  comm_time_s           REAL,
  comm_exposed_s        REAL,
  PRIMARY KEY (run_id, rank)
) WITHOUT ROWID;

-- Per-phase step-time distribution of each rank (one row per phase).
CREATE TABLE rank_phase_stats (
  run_id   INTEGER NOT NULL,
  rank     INTEGER NOT NULL,
  phase    TEXT NOT NULL CHECK (phase IN ('data', 'forward', 'backward', 'comm', 'optimizer',
                                          'eval', 'checkpoint')),
  mean_s   REAL,
  median_s REAL,
  p95_s    REAL,
  min_s    REAL,
  max_s    REAL,
  PRIMARY KEY (run_id, rank, phase),
  FOREIGN KEY (run_id, rank) REFERENCES rank_results(run_id, rank) ON DELETE CASCADE
) WITHOUT ROWID;

CREATE TABLE steps (
  run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank           INTEGER NOT NULL,
  step           INTEGER NOT NULL,
  loss           REAL,
  lr             REAL,
  grad_norm      REAL,
  tokens         INTEGER NOT NULL,
  step_time_s    REAL,
  data_s         REAL,
  forward_s      REAL,
  backward_s     REAL,
  comm_s         REAL,
  optimizer_s    REAL,
  eval_s         REAL,
  checkpoint_s   REAL,
  comm_calls     INTEGER NOT NULL,
  comm_bytes     INTEGER NOT NULL,
  comm_exposed_s REAL,
  mem_active     INTEGER NOT NULL,
  mem_peak       INTEGER NOT NULL,
  PRIMARY KEY (run_id, rank, step)
) WITHOUT ROWID;

CREATE TABLE val_losses (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step   INTEGER NOT NULL,
  loss   REAL,
  PRIMARY KEY (run_id, step)
) WITHOUT ROWID;

CREATE TABLE poller_samples (
  id        INTEGER PRIMARY KEY,
  run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  t_s       REAL NOT NULL,
  pid       INTEGER NOT NULL,
  ppid      INTEGER NOT NULL,
  role      TEXT NOT NULL,
  rank      INTEGER,                         -- NULL: not a rank
  rss_bytes INTEGER NOT NULL,
  pss_bytes INTEGER,                         -- NULL: unknown
  command   TEXT NOT NULL
);
CREATE INDEX poller_samples_run_id ON poller_samples(run_id, t_s);

CREATE TABLE allreduce_rows (
  id         INTEGER PRIMARY KEY,
  run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  transport  TEXT NOT NULL,
  links      TEXT NOT NULL,
  world_size INTEGER NOT NULL,
  size_bytes INTEGER NOT NULL,
  count      INTEGER NOT NULL,
  dtype      TEXT NOT NULL,
  redop      TEXT NOT NULL,
  time_us    REAL,
  algbw_gbps REAL,
  busbw_gbps REAL,
  wrong      INTEGER NOT NULL
);
CREATE INDEX allreduce_rows_run_id ON allreduce_rows(run_id, size_bytes);
)sql";

constexpr Migration kMigrations[] = {
    {1, kSchemaV1},
};
static_assert(std::size(kMigrations) == kSchemaVersion,
              "one migration per schema version, in order");

}  // namespace

int schema_version(sqlite::Connection& db) {
  return static_cast<int>(db.query_int("PRAGMA user_version", "reading the schema version"));
}

void check_schema_compatible(sqlite::Connection& db) {
  // Reading the header is the first access to the file: this is where a
  // non-database file is detected (SQLITE_NOTADB via Connection::fail).
  int version = schema_version(db);
  int64_t app_id = db.query_int("PRAGMA application_id", "reading the application id");
  std::string file = db.path().string();
  if (version == 0) {
    int64_t objects = db.query_int("SELECT count(*) FROM sqlite_schema", "reading the schema");
    if (objects != 0 && app_id != kApplicationId) {
      throw Error(fmt::format(
          "{} is a SQLite database but not a trainscope results database", file));
    }
    return;
  }
  if (app_id != kApplicationId) {
    throw Error(fmt::format(
        "{} is a SQLite database but not a trainscope results database (application_id {:#x})",
        file, app_id));
  }
  if (version > kSchemaVersion) {
    throw Error(fmt::format("database {} has schema version {}, newer than this trainscope ({})",
                            file, version, kSchemaVersion));
  }
}

void migrate(sqlite::Connection& db) {
  check_schema_compatible(db);
  for (const Migration& m : kMigrations) {
    if (schema_version(db) >= m.version) continue;
    sqlite::Transaction transaction(db);
    // Another process may have migrated while we waited for the lock.
    if (schema_version(db) >= m.version) continue;
    db.exec(m.sql, fmt::format("migrating to schema version {}", m.version));
    db.exec(fmt::format("PRAGMA application_id = {}; PRAGMA user_version = {}", kApplicationId,
                        m.version),
            "recording the schema version");
    transaction.commit();
  }
  TS_CHECK(schema_version(db) == kSchemaVersion) << "migration ended at version "
                                                 << schema_version(db);
}

}  // namespace trainscope::results
