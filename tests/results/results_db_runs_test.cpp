// The results database: runs stored and read back, failures that roll back,
// stale runs, full disks, killed writers and concurrent readers.
#include "tests/results/results_db_fixture.h"

namespace trainscope::results {
namespace {

using nlohmann::json;
using testing::sample_summary;

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
  EXPECT_CONTAINS(db_error_of([&] { db.begin_run(42, run_case("a")); }), "no suite 42");
  int64_t suite_id = db.begin_suite(suite_info("s"));
  EXPECT_CONTAINS(db_error_of([&] { db.finish_run(99, RunStatus::kOk, 0, "", nullptr); }),
                  "no run 99");
  EXPECT_CONTAINS(db_error_of([&] { db.add_poller_samples(99, {}); }), "no run 99");
  int64_t run_id = db.begin_run(suite_id, run_case("a"));
  db.finish_run(run_id, RunStatus::kOk, 0, "", nullptr);
  EXPECT_CONTAINS(db_error_of([&] { db.finish_run(run_id, RunStatus::kFailed, 1, "", nullptr); }),
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
  std::string message = db_error_of([&] { db.finish_run(run_id, RunStatus::kOk, 0, "", &bad); });
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
    raw.exec(
        "CREATE TRIGGER main.fail_val BEFORE INSERT ON val_losses "
        "BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
        "trigger");
  }
  RunSummary fine = sample_summary(2, 5, 3);
  message = db_error_of([&] { db.finish_run(run_id, RunStatus::kOk, 0, "", &fine); });
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
    const std::string message = db_error_of([&] {
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
  const std::string message = db_error_of([] { ResultsDb::open_for_writing("/sys/results.db"); });
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
    const std::string message = db_error_of([&] {
      if (writing)
        ResultsDb::open_for_writing(path_);
      else
        ResultsDb::open_for_reading(path_);
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
