#include "results/results_db.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "kernels/check.h"
#include "results/schema.h"
#include "results/sqlite.h"
#include "tests/results/sample_records.h"

namespace trainscope::results {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::sample_summary;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

class ResultsDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trainscope_results_db_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = dir_ / "results.db";
  }
  void TearDown() override { fs::remove_all(dir_); }

  static SuiteInfo suite_info(const std::string& name) {
    SuiteInfo info;
    info.name = name;
    info.definition = "[suite]\nname = \"" + name + "\"\n";
    info.git_revision = "0123456789ab";
    info.host_facts = {{"hostname", "h"}, {"cores", 2}};
    info.environment = {{"openblas_threads", 2}};
    info.command_line = "trainscope suite " + name + ".toml";
    return info;
  }

  static RunCase run_case(const std::string& name, int world_size = 2) {
    RunCase c;
    c.case_name = name;
    c.config = {{"batch", 4}, {"steps", 10}};
    c.mode = "ddp";
    c.reduction = "bucketed";
    c.bucket_mb = 25.0;
    c.world_size = world_size;
    c.threads = 1;
    c.transport = {{"OMPI_MCA_btl", "self,tcp"}};
    c.links = "lo";
    c.launcher_command = "mpirun -np 2 trainscope train";
    c.repetition = 1;
    return c;
  }

  // Count of rows in `table` for `run_id`, through a separate connection.
  int64_t count_rows(const std::string& table, int64_t run_id) {
    sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadOnly, 1000);
    return raw.query_int("SELECT count(*) FROM " + table + " WHERE run_id = " +
                             std::to_string(run_id),
                         "counting");
  }

  fs::path dir_;
  fs::path path_;
};

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
                                        "'table' AND name = '") + table + "'",
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
  int64_t run_id = 0;
  RunSummary summary = sample_summary(2, 3);
  const AllReduceRow row = testing::sample_allreduce_row(4096);
  {
    ResultsDb db = ResultsDb::open_for_writing(path_);
    const int64_t suite_id = db.begin_suite(suite_info("old"));
    run_id = db.begin_run(suite_id, run_case("a"));
    db.finish_run(run_id, RunStatus::kOk, 0, "", &summary);
    db.add_allreduce_rows(run_id, std::vector<AllReduceRow>{row});
  }
  {  // As an older trainscope would have made it: without these columns.
    sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadWrite, 1000);
    raw.exec("ALTER TABLE allreduce_rows DROP COLUMN algbw_gbps; "
             "ALTER TABLE allreduce_rows DROP COLUMN call_time_us; "
             "ALTER TABLE rank_results DROP COLUMN data_tokens_held; "
             "ALTER TABLE rank_results DROP COLUMN load_end_other_runnable; "
             "ALTER TABLE rank_results DROP COLUMN load_end_loadavg_1m; "
             "ALTER TABLE allreduce_rows DROP COLUMN algorithm; "
             "ALTER TABLE allreduce_rows DROP COLUMN mpi_algorithm",
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
    raw.exec("ALTER TABLE runs DROP COLUMN parameters; "
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
  EXPECT_EQ(raw.query_text("SELECT parameters || '/' || trainable_parameters FROM runs WHERE id = " +
                               std::to_string(run_id),
                           "the counts"),
            "28388096/32768");
}

// The machine's limits: a suite's and the doctor's (no suite) apart, latest
// first, every field back as stored.
TEST_F(ResultsDbTest, MachineLimitsRoundTrip) {
  const MachineLimit sgemm{.kind = LimitKind::kSgemm, .model = "tiny", .rows = 62, .threads = 2,
                           .value = 12.5, .detail = "OpenBLAS 0.3.21 Zen: 2 x (62x32->96)",
                           .source = std::string(kLimitsBySuiteRun), .host = "h",
                           .measured_at = "2026-01-01T00:00:01.000Z"};
  MachineLimit busbw{.kind = LimitKind::kAllReduce, .transport = "shm", .ranks = 2, .value = 3.25,
                     .detail = "sweep", .source = std::string(kLimitsBySuiteRun), .host = "h",
                     .measured_at = "2026-01-01T00:00:02.000Z"};
  MachineLimit doctor{.kind = LimitKind::kMemcpy, .threads = 1, .value = 9.5, .detail = "memcpy",
                      .source = std::string(kLimitsByDoctor), .host = "h",
                      .measured_at = "2026-01-01T00:00:03.000Z"};
  ResultsDb db = ResultsDb::open_for_writing(path_);
  const int64_t suite_id = db.begin_suite(suite_info("limits"));
  const int64_t other = db.begin_suite(suite_info("other"));
  db.add_machine_limits(suite_id, std::vector{sgemm, busbw});
  db.add_machine_limits(std::nullopt, std::vector{doctor});
  EXPECT_EQ(db.machine_limits(suite_id), (std::vector{busbw, sgemm}));
  EXPECT_EQ(db.machine_limits(std::nullopt), std::vector{doctor});
  EXPECT_TRUE(db.machine_limits(other).empty());
  EXPECT_CONTAINS(error_of([&] { db.add_machine_limits(999, std::vector{sgemm}); }), "no suite 999");
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
  EXPECT_CONTAINS(error_of([&] { ResultsDb::open_for_writing(path_); }), expected);
  EXPECT_CONTAINS(error_of([&] { ResultsDb::open_for_reading(path_); }), expected);
}

TEST_F(ResultsDbTest, GarbageFileIsRefusedAndLeftAlone) {
  std::string garbage(4096, 'x');
  std::ofstream(path_) << garbage;
  std::string message = error_of([&] { ResultsDb::open_for_writing(path_); });
  EXPECT_CONTAINS(message, path_.string());
  EXPECT_CONTAINS(message, "not a SQLite database");
  EXPECT_CONTAINS(error_of([&] { ResultsDb::open_for_reading(path_); }), "not a SQLite database");
  std::ifstream in(path_);
  std::string after((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, garbage);
}

TEST_F(ResultsDbTest, EmptySqliteFileIsNotReadable) {
  { sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadWrite, 1000); }
  std::ofstream(path_, std::ios::app).flush();
  std::string message = error_of([&] { ResultsDb::open_for_reading(path_); });
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
  std::string message = error_of([&] { ResultsDb::open_for_writing(path_); });
  EXPECT_CONTAINS(message, "not a trainscope results database");
  EXPECT_CONTAINS(message, path_.string());
}

TEST_F(ResultsDbTest, UnwritableOrMissingPathsAreNamed) {
  fs::path file = dir_ / "plain_file";
  std::ofstream(file) << "x";
  fs::path under_file = file / "results.db";
  std::string message = error_of([&] { ResultsDb::open_for_writing(under_file); });
  EXPECT_CONTAINS(message, under_file.string());

  fs::path missing = dir_ / "missing.db";
  message = error_of([&] { ResultsDb::open_for_reading(missing); });
  EXPECT_CONTAINS(message, missing.string());
  EXPECT_FALSE(fs::exists(missing));

  if (::geteuid() != 0) {  // root ignores directory permissions
    fs::path locked_dir = dir_ / "ro";
    fs::create_directories(locked_dir);
    fs::permissions(locked_dir, fs::perms::owner_read | fs::perms::owner_exec);
    message = error_of([&] { ResultsDb::open_for_writing(locked_dir / "r.db"); });
    fs::permissions(locked_dir, fs::perms::owner_all);
    EXPECT_CONTAINS(message, (locked_dir / "r.db").string());
  }
}

TEST_F(ResultsDbTest, LockedDatabaseGivesClearError) {
  ResultsDb db = ResultsDb::open_for_writing(path_, {.busy_timeout_ms = 100});
  sqlite::Connection other(path_, sqlite::Connection::Mode::kReadWrite, 0);
  other.exec("BEGIN IMMEDIATE", "lock");
  auto start = std::chrono::steady_clock::now();
  std::string message = error_of([&] { db.begin_suite(suite_info("s")); });
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_CONTAINS(message, "locked");
  EXPECT_CONTAINS(message, path_.string());
  EXPECT_GE(waited, std::chrono::milliseconds(90));
  other.exec("ROLLBACK", "unlock");
  EXPECT_GT(db.begin_suite(suite_info("s")), 0);  // works once the lock is gone
}

TEST_F(ResultsDbTest, StoresAndReadsBackEverything) {
  ResultsDb db = ResultsDb::open_for_writing(path_);
  int64_t old_suite = db.begin_suite(suite_info("old"));
  db.finish_suite(old_suite);
  int64_t suite_id = db.begin_suite(suite_info("new"));
  EXPECT_EQ(db.latest_suite_id(), suite_id);
  auto suites = db.list_suites();
  ASSERT_EQ(suites.size(), 2u);
  EXPECT_EQ(suites[0].id, suite_id);
  EXPECT_EQ(suites[0].info.environment, suite_info("new").environment);
  EXPECT_EQ(suites[0].info.definition, suite_info("new").definition);
  EXPECT_FALSE(suites[0].info.finished_at.has_value());
  EXPECT_TRUE(suites[1].info.finished_at.has_value());

  RunSummary summary = sample_summary(3, 6);
  summary.steps[1][4].loss = std::nan("");  // a diverged loss is stored as NULL
  summary.failed_step = 4;
  summary.status = RunStatus::kFailed;
  summary.error = "loss is NaN";
  int64_t run_id = db.begin_run(suite_id, run_case("a", 3));
  EXPECT_EQ(db.run(run_id)->status, RunStatus::kRunning);
  db.finish_run(run_id, RunStatus::kFailed, 1, "trainer exited with 1", &summary);

  RunRow row = *db.run(run_id);
  EXPECT_EQ(row.status, RunStatus::kFailed);
  EXPECT_EQ(row.exit_code, 1);
  EXPECT_EQ(row.error, "trainer exited with 1");
  EXPECT_EQ(row.run_case, run_case("a", 3));
  EXPECT_TRUE(row.finished_at.has_value());
  EXPECT_TRUE(row.has_summary);
  EXPECT_EQ(row.totals, summary.totals);

  std::optional<RunSummary> back = db.run_summary(run_id);
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(std::isnan(back->steps[1][4].loss));
  back->steps[1][4].loss = summary.steps[1][4].loss = 0;
  EXPECT_EQ(json(*back), json(summary));
  EXPECT_EQ(*back, summary);
  EXPECT_EQ(db.rank_results(run_id), summary.ranks);
  EXPECT_EQ(db.steps(run_id, 2), summary.steps[2]);
  EXPECT_EQ(db.steps(run_id).size(), 18u);
  EXPECT_EQ(db.val_losses(run_id), summary.val);

  std::vector<profiler::ProcessSample> samples;
  for (int i = 0; i < 9; ++i) samples.push_back(testing::sample_poller(i));
  db.add_poller_samples(run_id, samples);
  EXPECT_EQ(db.poller_samples(run_id), samples);
  std::vector<AllReduceRow> rows = {testing::sample_allreduce_row(4096),
                                    testing::sample_allreduce_row(1 << 20)};
  db.add_allreduce_rows(run_id, rows);
  EXPECT_EQ(db.allreduce_rows(run_id), rows);

  int64_t skipped = db.mark_skipped(suite_id, run_case("b"), "needs 4 ranks");
  int64_t no_summary = db.begin_run(suite_id, run_case("c"));
  db.finish_run(no_summary, RunStatus::kFailed, 137, "killed", nullptr);
  auto runs = db.list_runs(suite_id);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[1].id, skipped);
  EXPECT_EQ(runs[1].status, RunStatus::kSkipped);
  EXPECT_EQ(runs[1].error, "needs 4 ranks");
  EXPECT_FALSE(runs[2].has_summary);
  EXPECT_EQ(runs[2].exit_code, 137);
  EXPECT_FALSE(db.run_summary(no_summary).has_value());
  EXPECT_TRUE(db.list_runs(old_suite).empty());
  EXPECT_EQ(db.integrity_check(), "ok");
}

TEST_F(ResultsDbTest, BadIdsAndDoubleFinishAreErrors) {
  ResultsDb db = ResultsDb::open_for_writing(path_);
  EXPECT_CONTAINS(error_of([&] { db.begin_run(42, run_case("a")); }), "no suite 42");
  int64_t suite_id = db.begin_suite(suite_info("s"));
  EXPECT_CONTAINS(error_of([&] { db.finish_run(99, RunStatus::kOk, 0, "", nullptr); }),
                  "no run 99");
  EXPECT_CONTAINS(error_of([&] { db.add_poller_samples(99, {}); }), "no run 99");
  int64_t run_id = db.begin_run(suite_id, run_case("a"));
  db.finish_run(run_id, RunStatus::kOk, 0, "", nullptr);
  EXPECT_CONTAINS(error_of([&] { db.finish_run(run_id, RunStatus::kFailed, 1, "", nullptr); }),
                  "already finished");
  EXPECT_EQ(db.run(run_id)->status, RunStatus::kOk);
}

TEST_F(ResultsDbTest, FailureMidFinishRunRollsBack) {
  ResultsDb db = ResultsDb::open_for_writing(path_);
  int64_t suite_id = db.begin_suite(suite_info("s"));
  RunSummary good = sample_summary(2, 5, 1);
  int64_t earlier = db.begin_run(suite_id, run_case("earlier"));
  db.finish_run(earlier, RunStatus::kOk, 0, "", &good);

  // A duplicate step of rank 1 violates the steps primary key after the run
  // row and both ranks' results have been written in the transaction.
  RunSummary bad = sample_summary(2, 5, 2);
  bad.steps[1][3].step = 2;
  int64_t run_id = db.begin_run(suite_id, run_case("bad"));
  std::string message = error_of([&] { db.finish_run(run_id, RunStatus::kOk, 0, "", &bad); });
  EXPECT_CONTAINS(message, "step 2 of rank 1");
  EXPECT_CONTAINS(message, path_.string());
  RunRow row = *db.run(run_id);
  EXPECT_EQ(row.status, RunStatus::kRunning);
  EXPECT_FALSE(row.has_summary);
  EXPECT_EQ(count_rows("rank_results", run_id), 0);
  EXPECT_EQ(count_rows("rank_phase_stats", run_id), 0);
  EXPECT_EQ(count_rows("steps", run_id), 0);

  // The last insert (validation losses) failing rolls back everything too.
  {
    sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadWrite, 1000);
    raw.exec("CREATE TRIGGER main.fail_val BEFORE INSERT ON val_losses "
             "BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
             "trigger");
  }
  RunSummary fine = sample_summary(2, 5, 3);
  message = error_of([&] { db.finish_run(run_id, RunStatus::kOk, 0, "", &fine); });
  EXPECT_CONTAINS(message, "injected failure");
  EXPECT_EQ(db.run(run_id)->status, RunStatus::kRunning);
  EXPECT_EQ(count_rows("steps", run_id), 0);
  EXPECT_EQ(count_rows("rank_results", run_id), 0);

  EXPECT_EQ(db.run_summary(earlier), good);
  EXPECT_EQ(db.integrity_check(), "ok");
  // The runner can still record the case as failed.
  db.finish_run(run_id, RunStatus::kFailed, 1, message, nullptr);
  EXPECT_EQ(db.run(run_id)->status, RunStatus::kFailed);
}

// A second runner on the same database must not fail a live runner's case:
// only runs of a runner that is gone are stale.
TEST_F(ResultsDbTest, MarkStaleRunningFailedLeavesALiveRunnersRuns) {
  ResultsDb db = ResultsDb::open_for_writing(path_);
  int64_t suite_id = db.begin_suite(suite_info("s"));
  int64_t done = db.begin_run(suite_id, run_case("done"));
  db.finish_run(done, RunStatus::kOk, 0, "", nullptr);
  int64_t live = db.begin_run(suite_id, run_case("live"));  // this process is its runner
  EXPECT_EQ(db.mark_stale_running_failed("runner died"), 0);
  EXPECT_EQ(db.run(live)->status, RunStatus::kRunning);
  EXPECT_EQ(db.run(done)->status, RunStatus::kOk);
  const RunRow row = *db.run(live);
  EXPECT_EQ(row.runner_pid, ::getpid());
  EXPECT_FALSE(row.runner_host.empty());
  EXPECT_FALSE(row.runner_identity.empty());
}

TEST_F(ResultsDbTest, MarkStaleRunningFailedMarksRunsOfRunnersThatAreGone) {
  ResultsDb db = ResultsDb::open_for_writing(path_);
  // A pid that is free: a child that has exited and been reaped.
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  const int64_t suite_id = db.begin_suite(suite_info("s"));
  auto running_run = [&](const std::string& sql_set) {
    const int64_t run_id = db.begin_run(suite_id, run_case("r"));
    sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadWrite, 1000);
    raw.exec(fmt::format("UPDATE runs SET {} WHERE id = {}", sql_set, run_id), "faking");
    return run_id;
  };
  const int64_t dead = running_run(fmt::format("runner_pid = {}", gone));
  const int64_t reused = running_run("runner_identity = 'another process'");  // our pid, reused
  const int64_t old_db = running_run("runner_pid = NULL, runner_host = '', runner_identity = ''");
  const int64_t elsewhere = running_run("runner_host = 'another-host', runner_pid = 1");
  EXPECT_EQ(db.mark_stale_running_failed("runner died"), 3);
  for (int64_t id : {dead, reused, old_db}) {
    EXPECT_EQ(db.run(id)->status, RunStatus::kFailed) << id;
    EXPECT_EQ(db.run(id)->error, "runner died");
  }
  // Whether a runner on another host lives cannot be told from here.
  EXPECT_EQ(db.run(elsewhere)->status, RunStatus::kRunning);
  EXPECT_EQ(db.mark_stale_running_failed("again"), 0);
}

// Item 9: a runs row whose JSON is corrupt (edited by hand, or valid JSON of
// the wrong shape) is an Error naming the database, the run and the column,
// not a bare nlohmann exception.
TEST_F(ResultsDbTest, CorruptJsonInARunsRowNamesTheDatabaseRunAndColumn) {
  int64_t run_id = 0;
  {
    ResultsDb db = ResultsDb::open_for_writing(path_);
    const int64_t suite_id = db.begin_suite(suite_info("s"));
    run_id = db.begin_run(suite_id, run_case("a"));
    RunSummary summary = sample_summary(2, 3);
    db.finish_run(run_id, RunStatus::kOk, 0, "", &summary);
  }
  for (const auto& [column, value] : std::vector<std::pair<std::string, std::string>>{
           {"hosts", "'{\"not\": \"a list\"}'"},
           {"config", "'[1, 2]'"},
           {"summary_transport", "'{\"broken'"},
       }) {
    {
      sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadWrite, 1000);
      raw.exec("PRAGMA ignore_check_constraints = ON; UPDATE runs SET " + column + " = " + value,
               "corrupting");
    }
    ResultsDb db = ResultsDb::open_for_reading(path_);
    const std::string message = error_of([&] {
      db.run(run_id);
      db.run_summary(run_id);
    });
    EXPECT_CONTAINS(message, path_.string());
    EXPECT_CONTAINS(message, "run " + std::to_string(run_id));
    EXPECT_CONTAINS(message, column);
    sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadWrite, 1000);
    raw.exec("PRAGMA ignore_check_constraints = ON; UPDATE runs SET " + column + " = " +
                 (column == "hosts" ? "'[]'" : "'{}'"),
             "repairing");
  }
}

// Item 14: a database directory that takes no files names the real reason,
// not "No such file or directory" (sysfs refuses new files even to root).
TEST_F(ResultsDbTest, ADirectoryThatTakesNoFilesSaysWhy) {
  const std::string message = error_of([] { ResultsDb::open_for_writing("/sys/results.db"); });
  EXPECT_CONTAINS(message, "/sys");
  EXPECT_EQ(message.find("No such file"), std::string::npos) << message;
}

// Item 14: a trainscope database whose user_version was reset by hand is
// damaged, not "empty".
TEST_F(ResultsDbTest, AResetSchemaVersionIsNotCalledEmpty) {
  { ResultsDb::open_for_writing(path_); }
  {
    sqlite::Connection raw(path_, sqlite::Connection::Mode::kReadWrite, 1000);
    raw.exec("PRAGMA user_version = 0", "resetting");
  }
  for (bool writing : {false, true}) {
    const std::string message = error_of([&] {
      if (writing) ResultsDb::open_for_writing(path_); else ResultsDb::open_for_reading(path_);
    });
    EXPECT_CONTAINS(message, path_.string());
    EXPECT_CONTAINS(message, "schema version");
    EXPECT_EQ(message.find("empty"), std::string::npos) << message;
  }
}

// Item 14: a disk that fills up under the database is a failure of the work
// (exit code 1), not bad input, and leaves the database whole. The full
// disk is a file-size limit (RLIMIT_FSIZE) in a child process.
TEST_F(ResultsDbTest, AFullDiskIsAFailureAndLeavesTheDatabaseWhole) {
  int64_t suite_id = 0;
  {
    ResultsDb db = ResultsDb::open_for_writing(path_);
    suite_id = db.begin_suite(suite_info("s"));
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{1 << 20, 1 << 20};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      ResultsDb db = ResultsDb::open_for_writing(path_);
      const int64_t run_id = db.begin_run(suite_id, run_case("big"));
      RunSummary big = sample_summary(4, 20000);
      db.finish_run(run_id, RunStatus::kOk, 0, "", &big);
    } catch (const Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
      ::_exit(e.exit_code() == kExitFailure ? 42 : 43);
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 42) << "expected an Error with exit code 1 (43: another code)";
  ResultsDb db = ResultsDb::open_for_writing(path_);
  EXPECT_EQ(db.integrity_check(), "ok");
  EXPECT_EQ(count_rows("steps", db.list_runs(suite_id).at(0).id), 0);
}

TEST_F(ResultsDbTest, ReaderCannotWrite) {
  { ResultsDb::open_for_writing(path_).begin_suite(suite_info("s")); }
  ResultsDb reader = ResultsDb::open_for_reading(path_);
  EXPECT_EQ(reader.list_suites().size(), 1u);
  EXPECT_DEATH(reader.begin_suite(suite_info("t")), "open_for_reading");
}

TEST_F(ResultsDbTest, SigkilledWriterLeavesDatabaseValid) {
  int64_t suite_id = 0, earlier = 0;
  RunSummary good = sample_summary(2, 4);
  {
    ResultsDb db = ResultsDb::open_for_writing(path_);
    suite_id = db.begin_suite(suite_info("s"));
    earlier = db.begin_run(suite_id, run_case("earlier"));
    db.finish_run(earlier, RunStatus::kOk, 0, "", &good);
  }  // no connection may cross fork()

  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  fs::path wal = path_;
  wal += "-wal";
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    try {
      RunSummary big = sample_summary(4, 100000);
      ResultsDb db = ResultsDb::open_for_writing(path_);
      int64_t run_id = db.begin_run(suite_id, run_case("killed", 4));
      int64_t message[2] = {run_id, static_cast<int64_t>(fs::file_size(wal))};
      if (::write(pipe_fds[1], message, sizeof message) != sizeof message) ::_exit(3);
      db.finish_run(run_id, RunStatus::kOk, 0, "", &big);
    } catch (...) {
      ::_exit(4);
    }
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  int64_t message[2] = {0, 0};
  ASSERT_EQ(::read(pipe_fds[0], message, sizeof message), static_cast<ssize_t>(sizeof message));
  ::close(pipe_fds[0]);
  int64_t run_id = message[0];
  // Uncommitted pages spill into the WAL once the transaction outgrows the
  // page cache: kill the writer as soon as that happens, mid-transaction.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool grew = false;
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    auto size = fs::file_size(wal, ec);
    if (!ec && static_cast<int64_t>(size) > message[1] + (1 << 20)) {
      grew = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(grew) << "the child never started writing";
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child finished before it was killed";

  ResultsDb db = ResultsDb::open_for_writing(path_);
  EXPECT_EQ(db.integrity_check(), "ok");
  EXPECT_EQ(db.run_summary(earlier), good);
  EXPECT_EQ(db.run(run_id)->status, RunStatus::kRunning);  // begin_run was committed
  EXPECT_EQ(count_rows("steps", run_id), 0);
  EXPECT_EQ(count_rows("rank_results", run_id), 0);
  EXPECT_EQ(db.mark_stale_running_failed("runner was killed"), 1);
  EXPECT_EQ(db.run(run_id)->status, RunStatus::kFailed);
}

TEST_F(ResultsDbTest, ReadersWorkDuringAWrite) {
  ResultsDb writer = ResultsDb::open_for_writing(path_);
  int64_t suite_id = writer.begin_suite(suite_info("s"));
  RunSummary good = sample_summary(2, 4);
  int64_t earlier = writer.begin_run(suite_id, run_case("earlier"));
  writer.finish_run(earlier, RunStatus::kOk, 0, "", &good);

  // The writer thread ingests a large summary while this thread reads: a
  // reader must never block and never see part of the transaction.
  RunSummary big = sample_summary(4, 20000);
  int64_t run_id = writer.begin_run(suite_id, run_case("big", 4));
  std::atomic<bool> done{false};
  std::thread write_thread([&] {
    writer.finish_run(run_id, RunStatus::kOk, 0, "", &big);
    done = true;
  });
  ResultsDb reader = ResultsDb::open_for_reading(path_, {.busy_timeout_ms = 0});
  int reads = 0, saw_running = 0;
  while (true) {
    bool finished = done.load();
    // The writer may commit between any two reads: only a snapshot makes
    // the row and its steps agree.
    auto snapshot = reader.snapshot();
    RunRow row = *reader.run(run_id);
    size_t steps = reader.steps(run_id).size();
    if (row.status == RunStatus::kRunning) {
      ++saw_running;
      EXPECT_EQ(steps, 0u);
    } else {
      EXPECT_EQ(row.status, RunStatus::kOk);
      EXPECT_EQ(steps, 80000u);
    }
    EXPECT_EQ(reader.run_summary(earlier), good);
    ++reads;
    if (finished) break;
  }
  write_thread.join();
  EXPECT_GT(reads, 1);
  EXPECT_GT(saw_running, 0);
  EXPECT_EQ(reader.run(run_id)->status, RunStatus::kOk);
  EXPECT_EQ(reader.rank_results(run_id), big.ranks);
}

TEST_F(ResultsDbTest, ASnapshotDoesNotSeeLaterCommits) {
  ResultsDb writer = ResultsDb::open_for_writing(path_);
  int64_t suite_id = writer.begin_suite(suite_info("s"));
  int64_t run_id = writer.begin_run(suite_id, run_case("case"));
  RunSummary summary = sample_summary(2, 3);
  ResultsDb reader = ResultsDb::open_for_reading(path_);
  {
    auto snapshot = reader.snapshot();
    EXPECT_EQ(reader.run(run_id)->status, RunStatus::kRunning);
    writer.finish_run(run_id, RunStatus::kOk, 0, "", &summary);
    int64_t later = writer.begin_run(suite_id, run_case("later"));
    EXPECT_EQ(reader.run(run_id)->status, RunStatus::kRunning);
    EXPECT_TRUE(reader.steps(run_id).empty());
    EXPECT_EQ(reader.run_summary(run_id), std::nullopt);
    EXPECT_EQ(reader.run(later), std::nullopt);
    EXPECT_EQ(reader.list_runs(suite_id).size(), 1u);
  }
  EXPECT_EQ(reader.run(run_id)->status, RunStatus::kOk);
  EXPECT_EQ(reader.steps(run_id).size(), 6u);
  EXPECT_EQ(reader.list_runs(suite_id).size(), 2u);
  {
    // A snapshot on the writer's own connection forbids writes until it ends.
    auto snapshot = writer.snapshot();
    EXPECT_THROW(writer.begin_run(suite_id, run_case("refused")), Error);
  }
  EXPECT_NO_THROW(writer.begin_run(suite_id, run_case("accepted")));
}

}  // namespace
}  // namespace trainscope::results
