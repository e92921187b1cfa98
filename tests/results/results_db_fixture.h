// The fixture of the results database tests: a fresh directory per test,
// sample suite and case records, and a row count through a second connection.
#ifndef TRAINSCOPE_TESTS_RESULTS_RESULTS_DB_FIXTURE_H_
#define TRAINSCOPE_TESTS_RESULTS_RESULTS_DB_FIXTURE_H_

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

#include "base/check.h"
#include "results/schema.h"
#include "results/sqlite.h"
#include "tests/results/sample_records.h"

namespace trainscope::results {

namespace fs = std::filesystem;

// The message of the Error f throws ("" if none).
inline std::string db_error_of(const std::function<void()>& f) {
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
    return raw.query_int(
        "SELECT count(*) FROM " + table + " WHERE run_id = " + std::to_string(run_id), "counting");
  }

  fs::path dir_;
  fs::path path_;
};

}  // namespace trainscope::results

#endif  // TRAINSCOPE_TESTS_RESULTS_RESULTS_DB_FIXTURE_H_
