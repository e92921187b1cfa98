#include "results/records.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "base/atomic_file.h"
#include "base/check.h"
#include "tests/results/sample_records.h"

namespace trainscope::results {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::sample_summary;

// A fresh empty directory per test, removed afterwards.
class RecordsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trainscope_records_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

  // Loads `j` from a file and returns the error message (empty if none).
  std::string load_error(const json& j) {
    fs::path path = dir_ / "summary.json";
    write(path, j.dump());
    try {
      load_run_summary(path);
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), kExitBadInput);
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(RecordsTest, SummaryJsonRoundTrip) {
  RunSummary original = sample_summary(3, 7);
  original.failed_step = 6;
  original.status = RunStatus::kFailed;
  original.error = "loss became NaN";
  json j = original;
  EXPECT_EQ(j.at("schema"), "trainscope.run_summary/1");
  EXPECT_EQ(j.at("ranks").at(2).at("data").at("bytes_held"), 64002);
  EXPECT_EQ(j.at("steps").size(), 3u);
  EXPECT_EQ(j.at("steps").at(1).size(), 7u);
  RunSummary back = j.get<RunSummary>();
  EXPECT_EQ(back, original);
  EXPECT_EQ(json(back), j);
}

TEST_F(RecordsTest, SaveLoadRoundTripLeavesNoTemporaries) {
  RunSummary original = sample_summary(2, 4);
  fs::path path = dir_ / "run.json";
  save_run_summary(original, path);
  save_run_summary(original, path);  // overwrite goes through rename too
  EXPECT_EQ(load_run_summary(path), original);
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "run.json");
  }
  EXPECT_EQ(files, 1);
}

TEST_F(RecordsTest, NonFiniteValuesTravelAsNull) {
  RunSummary s = sample_summary(1, 3);
  s.steps[0][2].loss = std::nan("");
  s.steps[0][2].grad_norm = INFINITY;
  json j = s;
  EXPECT_TRUE(j["steps"][0][2]["loss"].is_null());
  RunSummary back = json::parse(j.dump()).get<RunSummary>();
  EXPECT_TRUE(std::isnan(back.steps[0][2].loss));
  EXPECT_TRUE(std::isnan(back.steps[0][2].grad_norm));
  EXPECT_EQ(back.steps[0][1], s.steps[0][1]);
}

// Summaries and sweep rows written before the host load and the per-call
// times were recorded: they read with those unknown.
TEST_F(RecordsTest, RecordsWrittenBeforeTheLoadAndCallTimesRead) {
  const RunSummary original = sample_summary(2, 2);
  json j = original;
  for (auto& rank : j["ranks"]) {
    rank.erase("load_start");
    rank.erase("load_end");
  }
  const RunSummary back = j.get<RunSummary>();
  for (const profiler::HostLoad& load : {back.ranks[1].load_start, back.ranks[1].load_end}) {
    EXPECT_TRUE(std::isnan(load.loadavg_1m));
    EXPECT_TRUE(std::isnan(load.loadavg_15m));
    EXPECT_EQ(load.other_runnable, -1);
    EXPECT_EQ(load.cores, -1);
  }
  EXPECT_EQ(back.ranks[1].data, original.ranks[1].data);

  json row = testing::sample_allreduce_row(4096);
  row.erase("call_time_us");
  EXPECT_TRUE(row.get<AllReduceRow>().call_time_us.empty());
  // Present, the load is read strictly like every other field.
  json bad = original;
  bad["ranks"][0]["load_end"].erase("cores");
  EXPECT_NE(load_error(bad).find("ranks[0].load_end.cores"), std::string::npos) << load_error(bad);
}

TEST_F(RecordsTest, MissingFieldIsNamedWithPathAndFile) {
  json j = sample_summary(2, 2);
  j["ranks"][1]["data"].erase("bytes_held");
  std::string message = load_error(j);
  EXPECT_NE(message.find("ranks[1].data.bytes_held"), std::string::npos) << message;
  EXPECT_NE(message.find("missing"), std::string::npos) << message;
  EXPECT_NE(message.find((dir_ / "summary.json").string()), std::string::npos) << message;
}

// The warm-up count decides which steps the figures use: a string or a
// negative number is named, not thrown by the JSON library.
TEST_F(RecordsTest, AWarmupThatIsNotACountIsNamed) {
  json j = sample_summary(2, 2);
  j["options"]["warmup_steps"] = "2";
  EXPECT_NE(load_error(j).find("options.warmup_steps"), std::string::npos) << load_error(j);
  j["options"]["warmup_steps"] = -3;
  EXPECT_NE(load_error(j).find("'options.warmup_steps' must be >= 0, got -3"), std::string::npos)
      << load_error(j);
}

TEST_F(RecordsTest, WrongTypesAreNamed) {
  json j = sample_summary(2, 3);
  j["steps"][1][2]["loss"] = "low";
  std::string message = load_error(j);
  EXPECT_NE(message.find("steps[1][2].loss"), std::string::npos) << message;
  EXPECT_NE(message.find("must be a number"), std::string::npos) << message;

  j = sample_summary(2, 3);
  j["ranks"][0]["pid"] = 12.5;
  message = load_error(j);
  EXPECT_NE(message.find("ranks[0].pid"), std::string::npos) << message;
  EXPECT_NE(message.find("integer"), std::string::npos) << message;

  j = sample_summary(2, 3);
  j["transport"]["OMPI_MCA_btl"] = 3;
  message = load_error(j);
  EXPECT_NE(message.find("transport.OMPI_MCA_btl"), std::string::npos) << message;

  j = sample_summary(2, 3);
  j["model"] = json::array();
  message = load_error(j);
  EXPECT_NE(message.find("'model'"), std::string::npos) << message;
}

TEST_F(RecordsTest, BadValuesAreRejected) {
  json j = sample_summary(2, 3);
  j["status"] = "running";
  std::string message = load_error(j);
  EXPECT_NE(message.find("status"), std::string::npos) << message;

  j = sample_summary(2, 3);
  j["schema"] = "trainscope.run_summary/99";
  message = load_error(j);
  EXPECT_NE(message.find("run_summary/99"), std::string::npos) << message;

  j = sample_summary(2, 3);
  j["ranks"][1]["rank"] = 5;
  message = load_error(j);
  EXPECT_NE(message.find("ranks[1]"), std::string::npos) << message;

  // A valid summary loads without complaint, so the checks above are specific.
  EXPECT_EQ(load_error(json(sample_summary(2, 3))), "");
}

TEST_F(RecordsTest, UnreadableOrInvalidFilesAreNamed) {
  fs::path missing = dir_ / "nope.json";
  try {
    load_run_summary(missing);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(missing.string()), std::string::npos) << e.what();
  }
  fs::path garbage = dir_ / "garbage.json";
  write(garbage, "{\"schema\": ");
  try {
    load_run_summary(garbage);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(garbage.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
  }
}

TEST_F(RecordsTest, SaveIntoMissingDirectoryFailsCleanly) {
  fs::path path = dir_ / "no_such_dir" / "run.json";
  try {
    save_run_summary(sample_summary(1, 1), path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(RecordsTest, JsonLinesRoundTripAndErrorsNameTheLine) {
  fs::path rows_path = dir_ / "sweep.jsonl";
  std::vector<AllReduceRow> rows = {testing::sample_allreduce_row(1024),
                                    testing::sample_allreduce_row(1 << 20)};
  write(rows_path, json(rows[0]).dump() + "\n\n" + json(rows[1]).dump() + "\n");
  EXPECT_EQ(load_allreduce_rows(rows_path), rows);

  json bad = rows[1];
  bad.erase("busbw_gbps");
  write(rows_path, json(rows[0]).dump() + "\n" + bad.dump() + "\n");
  try {
    load_allreduce_rows(rows_path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(rows_path.string() + ":2"), std::string::npos) << message;
    EXPECT_NE(message.find("busbw_gbps"), std::string::npos) << message;
  }
}

// Sweep rows say how they were reduced; rows written before that ran "mpi"
// with Open MPI's own choice and read so.
TEST_F(RecordsTest, SweepRowsRecordTheAlgorithmAndOldRowsReadAsMpi) {
  json old_row = testing::sample_allreduce_row(4096);
  old_row.erase("algorithm");
  old_row.erase("mpi_algorithm");
  const AllReduceRow back = old_row.get<AllReduceRow>();
  EXPECT_EQ(back.algorithm, "mpi");
  EXPECT_EQ(back.mpi_algorithm, 0);

  AllReduceRow ring = testing::sample_allreduce_row(4096);
  ring.mpi_algorithm = 4;
  AllReduceRow shm = testing::sample_allreduce_row(8192);
  shm.algorithm = "shm";
  const fs::path rows_path = dir_ / "sweep.jsonl";
  write(rows_path, json(ring).dump() + "\n" + json(shm).dump() + "\n");
  EXPECT_EQ(load_allreduce_rows(rows_path), (std::vector<AllReduceRow>{ring, shm}));
}

TEST_F(RecordsTest, UnknownAlgorithmsAreNamedWithTheLine) {
  const fs::path rows_path = dir_ / "sweep.jsonl";
  auto error = [&](const std::string& key, const json& value) -> std::string {
    json row = testing::sample_allreduce_row(1024);
    row[key] = value;
    write(rows_path, json(testing::sample_allreduce_row(8)).dump() + "\n" + row.dump() + "\n");
    try {
      load_allreduce_rows(rows_path);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  const std::string nccl = error("algorithm", "nccl");
  EXPECT_NE(nccl.find(rows_path.string() + ":2"), std::string::npos) << nccl;
  EXPECT_NE(nccl.find("'algorithm' is 'nccl', expected one of: mpi, shm, hier"), std::string::npos)
      << nccl;
  const std::string seven = error("mpi_algorithm", 7);
  EXPECT_NE(seven.find("'mpi_algorithm' is 7"), std::string::npos) << seven;
  EXPECT_NE(seven.find("6 rabenseifner"), std::string::npos) << seven;
  // An Open MPI algorithm under shm would label a row with what did not run.
  json shm_ring = testing::sample_allreduce_row(1024);
  shm_ring["algorithm"] = "shm";
  shm_ring["mpi_algorithm"] = 4;
  write(rows_path, shm_ring.dump() + "\n");
  EXPECT_THROW(load_allreduce_rows(rows_path), Error);
  EXPECT_EQ(error("algorithm", "hier"), "");  // the checks above are specific
}

TEST_F(RecordsTest, AStepWithoutCommTimeReadsAsZero) {
  json j = to_json_value(sample_summary(1, 2));
  j["steps"][0][1].erase("comm_time_s");  // written before the field existed
  write(dir_ / "old.json", j.dump());
  const RunSummary s = load_run_summary(dir_ / "old.json");
  EXPECT_EQ(s.steps[0][1].comm_time_s, 0.0);
  EXPECT_GT(s.steps[0][0].comm_time_s, 0.0);
}

TEST_F(RecordsTest, RankStatusRoundTripAndStrictReading) {
  profiler::RankStatus status;
  status.rank = 1;
  status.host = "nodeB";
  status.pid = 4242;
  status.stage = "train";
  status.step = 3;
  status.phase = "comm";
  status.collective = "all_reduce fused";
  status.bucket = 2;
  status.wait_s = 6.5;
  status.step_s = 7.25;
  status.phase_s = 0.5;
  status.stalled = true;
  const fs::path path = rank_status_path(dir_, 1);
  EXPECT_EQ(path.filename(), "rank-1.json");
  save_rank_status(status, path);
  EXPECT_EQ(load_rank_status(path), status);

  json j = json::parse(read_file(path));
  j["stalled"] = "yes";
  write(path, j.dump());
  try {
    load_rank_status(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank status " + path.string()), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("'stalled'"), std::string::npos) << e.what();
  }
}

TEST(RunStatusTest, NamesRoundTrip) {
  for (RunStatus s :
       {RunStatus::kRunning, RunStatus::kOk, RunStatus::kFailed, RunStatus::kSkipped}) {
    EXPECT_EQ(parse_run_status(to_string(s)), s);
  }
  EXPECT_EQ(parse_run_status("OK"), std::nullopt);
}

}  // namespace
}  // namespace trainscope::results
