// The results database: schema and migrations, and every way opening it can fail.
#include "tests/results/results_db_fixture.h"

namespace trainscope::results {
namespace {

using nlohmann::json;
using testing::sample_summary;

TEST_F(ResultsDbTest, NewDatabaseHasCurrentSchema) {
  ResultsDb db = ResultsDb::open_for_writing(path_);
  EXPECT_EQ(db.schema_version(), kSchemaVersion);
  EXPECT_EQ(db.integrity_check(), "ok");
  sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadOnly, 1000);
  EXPECT_EQ(raw.query_text("PRAGMA journal_mode", "journal"), "wal");
  EXPECT_EQ(raw.query_int("PRAGMA application_id", "id"), kApplicationId);
  for (const char* table : {"suites", "runs", "rank_results", "rank_phase_stats", "steps",
                            "val_losses", "poller_samples", "allreduce_rows", "machine_limits"}) {
    EXPECT_EQ(raw.query_int(std::string("SELECT count(*) FROM sqlite_schema WHERE type = "
                                        "'table' AND name = '") +
                                table + "'",
                            "table"),
              1)
        << table;
  }
  EXPECT_FALSE(db.latest_suite_id().has_value());
  EXPECT_TRUE(db.list_suites().empty());
}

TEST_F(ResultsDbTest, ReopenIsIdempotent) {
  int64_t suite_id = 0, run_id = 0;
  RunSummary summary = sample_summary(2, 3);
  {
    ResultsDb db = ResultsDb::open_for_writing(path_);
    suite_id = db.begin_suite(suite_info("first"));
    run_id = db.begin_run(suite_id, run_case("a"));
    db.finish_run(run_id, RunStatus::kOk, 0, "", &summary);
  }
  auto schema_text = [&] {
    sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadOnly, 1000);
    return raw.query_text("SELECT group_concat(sql, ';') FROM sqlite_schema", "schema");
  };
  std::string before = schema_text();
  for (int i = 0; i < 2; ++i) {
    ResultsDb db = ResultsDb::open_for_writing(path_);
    EXPECT_EQ(db.schema_version(), kSchemaVersion);
    EXPECT_EQ(db.run_summary(run_id), summary);
    EXPECT_EQ(db.list_runs(suite_id).size(), 1u);
  }
  EXPECT_EQ(schema_text(), before);
}

// A field added to a record's table after a database was made: the database
// reads as before with the new figure unknown, and gains the column (NULL in
// its old rows) when it is next opened for writing.
TEST_F(ResultsDbTest, ADatabaseMadeBeforeAFieldExistedReadsAndGainsItsColumn) {
  int64_t run_id = 0, suite_id = 0;
  RunSummary summary = sample_summary(2, 3);
  const AllReduceRow row = testing::sample_allreduce_row(4096);
  {
    ResultsDb db = ResultsDb::open_for_writing(path_);
    suite_id = db.begin_suite(suite_info("old"));
    run_id = db.begin_run(suite_id, run_case("a"));
    db.finish_run(run_id, RunStatus::kOk, 0, "", &summary);
    db.add_allreduce_rows(run_id, std::vector<AllReduceRow>{row});
    db.add_machine_limits(suite_id, std::vector{MachineLimit{.kind = LimitKind::kSgemm,
                                                             .model = "tiny",
                                                             .rows = 62,
                                                             .gemm = "onednn",
                                                             .value = 10}});
  }
  {  // As an older trainscope would have made it: without these columns.
    sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadWrite, 1000);
    raw.exec(
        "ALTER TABLE allreduce_rows DROP COLUMN algbw_gbps; "
        "ALTER TABLE allreduce_rows DROP COLUMN call_time_us; "
        "ALTER TABLE rank_results DROP COLUMN data_tokens_held; "
        "ALTER TABLE rank_results DROP COLUMN load_end_other_runnable; "
        "ALTER TABLE rank_results DROP COLUMN load_end_loadavg_1m; "
        "ALTER TABLE allreduce_rows DROP COLUMN algorithm; "
        "ALTER TABLE allreduce_rows DROP COLUMN mpi_algorithm; "
        "ALTER TABLE machine_limits DROP COLUMN gemm",
        "dropping columns");
  }
  {
    ResultsDb db = ResultsDb::open_for_reading(path_);
    const auto rows = db.allreduce_rows(run_id);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_TRUE(std::isnan(rows[0].algbw_gbps));
    EXPECT_TRUE(rows[0].call_time_us.empty());
    EXPECT_EQ(rows[0].algorithm, "mpi");  // what every sweep ran before it was recorded
    EXPECT_EQ(rows[0].mpi_algorithm, 0);
    EXPECT_EQ(rows[0].busbw_gbps, row.busbw_gbps);
    const auto ranks = db.rank_results(run_id);
    EXPECT_EQ(ranks[1].data.tokens_held, 0);
    EXPECT_EQ(ranks[1].data.bytes_held, summary.ranks[1].data.bytes_held);
    EXPECT_EQ(ranks[1].load_end.other_runnable, -1);
    EXPECT_TRUE(std::isnan(ranks[1].load_end.loadavg_1m));
    EXPECT_EQ(ranks[1].load_end.runnable, summary.ranks[1].load_end.runnable);
    const auto suite_limits = db.machine_limits(suite_id);
    ASSERT_EQ(suite_limits.size(), 1u);
    EXPECT_EQ(suite_limits[0].gemm, "") << "stored before --gemm was: applies under any";
    EXPECT_EQ(suite_limits[0].value, 10);
  }
  ResultsDb db = ResultsDb::open_for_writing(path_);
  EXPECT_TRUE(std::isnan(db.allreduce_rows(run_id)[0].algbw_gbps));
  AllReduceRow hier = row;
  hier.algorithm = "hier";
  AllReduceRow rabenseifner = row;
  rabenseifner.mpi_algorithm = 6;
  db.add_allreduce_rows(run_id, std::vector<AllReduceRow>{row, hier, rabenseifner});
  const auto rows = db.allreduce_rows(run_id);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[1], row);
  EXPECT_EQ(rows[2], hier);
  EXPECT_EQ(rows[3], rabenseifner);
  EXPECT_EQ(db.integrity_check(), "ok");
  EXPECT_EQ(db.machine_limits(suite_id).at(0).gemm, "");  // the column added, NULL read as ""
  // The old row got the column's default in the file itself, not only on reading.
  sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadOnly, 1000);
  EXPECT_EQ(raw.query_text("SELECT algorithm || '/' || ifnull(mpi_algorithm, 'NULL') FROM "
                           "allreduce_rows ORDER BY id LIMIT 1",
                           "the old row"),
            "mpi/NULL");
}

// The parameter counts of a fine-tune are columns of its run (derived from
// RunSummary's field table, as every figure is), queryable in SQL; a
// database made before they were recorded gains them and reads 0.
TEST_F(ResultsDbTest, ParameterCountsAreColumnsOfTheRun) {
  RunSummary summary = sample_summary(2, 3);
  summary.parameters = 28'388'096;
  summary.trainable_parameters = 32'768;
  int64_t old_run = 0, run_id = 0, suite_id = 0;
  {
    ResultsDb db = ResultsDb::open_for_writing(path_);
    suite_id = db.begin_suite(suite_info("finetune"));
    old_run = db.begin_run(suite_id, run_case("old"));
    db.finish_run(old_run, RunStatus::kOk, 0, "", &summary);
  }
  {  // As trainscope wrote it before the counts were recorded.
    sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadWrite, 1000);
    raw.exec(
        "ALTER TABLE runs DROP COLUMN parameters; "
        "ALTER TABLE runs DROP COLUMN trainable_parameters",
        "dropping columns");
  }
  {
    ResultsDb db = ResultsDb::open_for_reading(path_);
    EXPECT_EQ(db.run_summary(old_run)->trainable_parameters, 0);
  }
  ResultsDb db = ResultsDb::open_for_writing(path_);
  EXPECT_EQ(db.run_summary(old_run)->parameters, 0);
  run_id = db.begin_run(suite_id, run_case("lora"));
  db.finish_run(run_id, RunStatus::kOk, 0, "", &summary);
  EXPECT_EQ(db.run_summary(run_id), summary);
  sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadOnly, 1000);
  EXPECT_EQ(
      raw.query_text("SELECT parameters || '/' || trainable_parameters FROM runs WHERE id = " +
                         std::to_string(run_id),
                     "the counts"),
      "28388096/32768");
}

// The machine's limits: a suite's and the doctor's (no suite) apart, latest
// first, every field back as stored.
TEST_F(ResultsDbTest, MachineLimitsRoundTrip) {
  const MachineLimit sgemm{.kind = LimitKind::kSgemm,
                           .model = "tiny",
                           .rows = 62,
                           .threads = 2,
                           .gemm = "onednn",  // and ranks > 1: copies at once
                           .ranks = 2,
                           .value = 12.5,
                           .detail = "OpenBLAS 0.3.21 Zen: 2 x (62x32->96)",
                           .source = std::string(kLimitsBySuiteRun),
                           .host = "h",
                           .measured_at = "2026-01-01T00:00:01.000Z"};
  MachineLimit busbw{.kind = LimitKind::kAllReduce,
                     .transport = "shm",
                     .ranks = 2,
                     .value = 3.25,
                     .detail = "sweep",
                     .source = std::string(kLimitsBySuiteRun),
                     .host = "h",
                     .measured_at = "2026-01-01T00:00:02.000Z"};
  MachineLimit doctor{.kind = LimitKind::kMemcpy,
                      .threads = 1,
                      .value = 9.5,
                      .detail = "memcpy",
                      .source = std::string(kLimitsByDoctor),
                      .host = "h",
                      .measured_at = "2026-01-01T00:00:03.000Z"};
  ResultsDb db = ResultsDb::open_for_writing(path_);
  const int64_t suite_id = db.begin_suite(suite_info("limits"));
  const int64_t other = db.begin_suite(suite_info("other"));
  db.add_machine_limits(suite_id, std::vector{sgemm, busbw});
  db.add_machine_limits(std::nullopt, std::vector{doctor});
  EXPECT_EQ(db.machine_limits(suite_id), (std::vector{busbw, sgemm}));
  EXPECT_EQ(db.machine_limits(std::nullopt), std::vector{doctor});
  EXPECT_TRUE(db.machine_limits(other).empty());
  EXPECT_CONTAINS(db_error_of([&] { db.add_machine_limits(999, std::vector{sgemm}); }),
                  "no suite 999");
  ResultsDb reader = ResultsDb::open_for_reading(path_);
  EXPECT_EQ(reader.machine_limits(suite_id), (std::vector{busbw, sgemm}));
}

// A database made before limits were stored: read as having none (what
// `report` and `check` open), and given the table when opened for writing.
TEST_F(ResultsDbTest, ADatabaseMadeBeforeLimitsHasNoneAndGainsTheTable) {
  int64_t suite_id = 0;
  {
    ResultsDb db = ResultsDb::open_for_writing(path_);
    suite_id = db.begin_suite(suite_info("old"));
  }
  {
    sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadWrite, 1000);
    raw.exec("DROP TABLE machine_limits", "dropping the table");
  }
  {
    ResultsDb db = ResultsDb::open_for_reading(path_);
    EXPECT_TRUE(db.machine_limits(suite_id).empty());
    EXPECT_TRUE(db.machine_limits(std::nullopt).empty());
  }
  ResultsDb db = ResultsDb::open_for_writing(path_);
  const MachineLimit memcpy{.kind = LimitKind::kMemcpy, .value = 7, .host = "h"};
  db.add_machine_limits(suite_id, std::vector{memcpy});
  EXPECT_EQ(db.machine_limits(suite_id), std::vector{memcpy});
  EXPECT_EQ(db.integrity_check(), "ok");
}

// What the gradients travelled as is a column of the run; runs recorded
// before it existed read "fp32" (the column's default), as they ran.
TEST_F(ResultsDbTest, CommDtypeIsAColumnOfTheRunAndOldRunsReadFp32) {
  RunSummary summary = sample_summary(2, 3);
  int64_t old_run = 0, suite_id = 0;
  {
    ResultsDb db = ResultsDb::open_for_writing(path_);
    suite_id = db.begin_suite(suite_info("reductions"));
    old_run = db.begin_run(suite_id, run_case("old"));
    db.finish_run(old_run, RunStatus::kOk, 0, "", &summary);
  }
  {  // As trainscope wrote it before comm_dtype was recorded.
    sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadWrite, 1000);
    raw.exec("ALTER TABLE runs DROP COLUMN comm_dtype", "dropping the column");
  }
  ResultsDb db = ResultsDb::open_for_writing(path_);
  EXPECT_EQ(db.run_summary(old_run)->comm_dtype, "fp32");
  summary.comm_dtype = "bf16";
  const int64_t run_id = db.begin_run(suite_id, run_case("bf16"));
  db.finish_run(run_id, RunStatus::kOk, 0, "", &summary);
  EXPECT_EQ(db.run_summary(run_id), summary);
  sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadOnly, 1000);
  EXPECT_EQ(raw.query_text("SELECT group_concat(comm_dtype, '/') FROM (SELECT comm_dtype FROM "
                           "runs ORDER BY id)",
                           "the dtypes"),
            "fp32/bf16");
}

TEST_F(ResultsDbTest, NewerSchemaIsRefused) {
  { ResultsDb::open_for_writing(path_); }
  {
    sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadWrite, 1000);
    raw.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion + 1), "bump");
  }
  std::string expected = "database " + path_.string() + " has schema version " +
                         std::to_string(kSchemaVersion + 1) + ", newer than this trainscope (" +
                         std::to_string(kSchemaVersion) + ")";
  EXPECT_CONTAINS(db_error_of([&] { ResultsDb::open_for_writing(path_); }), expected);
  EXPECT_CONTAINS(db_error_of([&] { ResultsDb::open_for_reading(path_); }), expected);
}

TEST_F(ResultsDbTest, GarbageFileIsRefusedAndLeftAlone) {
  std::string garbage(4096, 'x');
  std::ofstream(path_) << garbage;
  std::string message = db_error_of([&] { ResultsDb::open_for_writing(path_); });
  EXPECT_CONTAINS(message, path_.string());
  EXPECT_CONTAINS(message, "not a SQLite database");
  EXPECT_CONTAINS(db_error_of([&] { ResultsDb::open_for_reading(path_); }),
                  "not a SQLite database");
  std::ifstream in(path_);
  std::string after((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, garbage);
}

TEST_F(ResultsDbTest, EmptySqliteFileIsNotReadable) {
  { sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadWrite, 1000); }
  std::ofstream(path_, std::ios::app).flush();
  std::string message = db_error_of([&] { ResultsDb::open_for_reading(path_); });
  EXPECT_CONTAINS(message, path_.string());
  EXPECT_CONTAINS(message, "not a trainscope results database");
  // Opening it for writing turns it into one.
  EXPECT_EQ(ResultsDb::open_for_writing(path_).schema_version(), kSchemaVersion);
  EXPECT_EQ(ResultsDb::open_for_reading(path_).schema_version(), kSchemaVersion);
}

TEST_F(ResultsDbTest, ForeignSqliteDatabaseIsRefused) {
  {
    sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadWrite, 1000);
    raw.exec("CREATE TABLE suites (x INTEGER)", "create");
  }
  std::string message = db_error_of([&] { ResultsDb::open_for_writing(path_); });
  EXPECT_CONTAINS(message, "not a trainscope results database");
  EXPECT_CONTAINS(message, path_.string());
}

TEST_F(ResultsDbTest, UnwritableOrMissingPathsAreNamed) {
  fs::path file = dir_ / "plain_file";
  std::ofstream(file) << "x";
  fs::path under_file = file / "results.db";
  std::string message = db_error_of([&] { ResultsDb::open_for_writing(under_file); });
  EXPECT_CONTAINS(message, under_file.string());

  fs::path missing = dir_ / "missing.db";
  message = db_error_of([&] { ResultsDb::open_for_reading(missing); });
  EXPECT_CONTAINS(message, missing.string());
  EXPECT_FALSE(fs::exists(missing));

  if (::geteuid() != 0) {  // root ignores directory permissions
    fs::path locked_dir = dir_ / "ro";
    fs::create_directories(locked_dir);
    fs::permissions(locked_dir, fs::perms::owner_read | fs::perms::owner_exec);
    message = db_error_of([&] { ResultsDb::open_for_writing(locked_dir / "r.db"); });
    fs::permissions(locked_dir, fs::perms::owner_all);
    EXPECT_CONTAINS(message, (locked_dir / "r.db").string());
  }
}

TEST_F(ResultsDbTest, LockedDatabaseGivesClearError) {
  ResultsDb db = ResultsDb::open_for_writing(path_, {.busy_timeout_ms = 100});
  sqlite::Connection other(path_, sqlite::Connection::Mode::kReadWrite, 0);
  other.exec("BEGIN IMMEDIATE", "lock");
  auto start = std::chrono::steady_clock::now();
  std::string message = db_error_of([&] { db.begin_suite(suite_info("s")); });
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_CONTAINS(message, "locked");
  EXPECT_CONTAINS(message, path_.string());
  EXPECT_GE(waited, std::chrono::milliseconds(90));
  other.exec("ROLLBACK", "unlock");
  EXPECT_GT(db.begin_suite(suite_info("s")), 0);  // works once the lock is gone
}

}  // namespace
}  // namespace trainscope::results
