// The results database, run summaries, reports and regression checks against
// golden files written by an earlier trainscope (testdata/README.md): however
// records are declared, stored and read, the schema, the rows, the JSON and
// every rendered table must stay byte for byte what they were. Fields added
// since (new columns, new JSON members) are left out of the comparison, and
// the old files must still read; a report that changes on purpose is
// regenerated (testdata/README.md says how).
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "base/atomic_file.h"
#include "report/gnuplot.h"
#include "check/regression_check.h"
#include "report/report.h"
#include "analysis/suite_data.h"
#include "results/records.h"
#include "results/results_db.h"
#include "results/schema.h"
#include "tests/temp_dir.h"

namespace trainscope {
namespace {

namespace fs = std::filesystem;
const fs::path kData = TRAINSCOPE_SOURCE_DIR "/tests/golden/testdata";

// Raw SQLite access, independent of the code under test.
class RawDb {
 public:
  explicit RawDb(const fs::path& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK) << path;
  }
  ~RawDb() { sqlite3_close(db_); }
  void exec(const std::string& sql) {
    char* error = nullptr;
    ASSERT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << error;
  }
  // Each row as "col=value|col=value", NULL spelled out; timestamps masked.
  std::vector<std::string> rows(const std::string& sql) {
    std::vector<std::string> out;
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sql;
    while (sqlite3_step(s) == SQLITE_ROW) {
      std::string row;
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        const std::string name = sqlite3_column_name(s, c);
        const auto* text = sqlite3_column_text(s, c);
        std::string value = text ? reinterpret_cast<const char*>(text) : "NULL";
        if (text && (name == "started_at" || name == "finished_at")) value = "<time>";
        row += (c ? "|" : "") + name + "=" + value;
      }
      out.push_back(std::move(row));
    }
    sqlite3_finalize(s);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

// The SQL of a schema object with comments and layout whitespace removed.
std::string normalize_sql(const std::string& sql) {
  std::string s = std::regex_replace(sql, std::regex("--[^\n]*"), "");
  s = std::regex_replace(s, std::regex("\\s+"), " ");
  s = std::regex_replace(s, std::regex(" ?([(),]) ?"), "$1");
  return s;
}

// The names of the columns `table` has in `db`.
std::set<std::string> columns_of(const fs::path& db, const std::string& table) {
  std::set<std::string> names;
  for (const auto& row : RawDb(db).rows("SELECT name FROM pragma_table_info('" + table + "')")) {
    names.insert(row.substr(row.find('=') + 1));
  }
  return names;
}

// The schema of `db` as normalized CREATE statements, leaving out the lines
// that declare columns the golden database does not have: fields added since
// it was written (each column is one line of the statements trainscope
// writes), and the tables (and their indexes) added since. Then the pragmas
// that mark the file.
std::vector<std::string> schema_of(const fs::path& db, const fs::path& golden) {
  std::vector<std::string> out;
  RawDb raw(db);
  for (const auto& row : raw.rows("SELECT type, name, tbl_name, sql FROM sqlite_schema "
                                  "ORDER BY type, name")) {
    const std::string table =
        row.substr(row.find("tbl_name=") + 9, row.find("|sql=") - row.find("tbl_name=") - 9);
    const auto old_columns = columns_of(golden, table);
    if (old_columns.empty()) continue;  // an added table
    std::string kept;
    std::istringstream lines(row);
    for (std::string line; std::getline(lines, line);) {
      const std::string first = line.substr(
          line.find_first_not_of(' ') == std::string::npos ? 0 : line.find_first_not_of(' '));
      const std::string name = first.substr(0, first.find(' '));
      const bool added_column = line.starts_with("  ") && columns_of(db, table).contains(name) &&
                                !old_columns.contains(name);
      if (!added_column) kept += line + "\n";
    }
    out.push_back(normalize_sql(std::regex_replace(kept, std::regex(",\\s*\\)"), ")")));
  }
  for (const auto& pragma : {"user_version", "application_id"}) {
    for (const auto& r : raw.rows(fmt::format("PRAGMA {}", pragma))) out.push_back(r);
  }
  return out;
}

// Every row of every table of the golden database, sorted within its table:
// the golden database's columns only, so fields added since it was written
// are left out.
std::vector<std::string> rows_of(const fs::path& db, const fs::path& golden) {
  RawDb raw(db);
  std::vector<std::string> out;
  for (const auto& table : RawDb(golden).rows("SELECT name FROM sqlite_schema WHERE type = "
                                              "'table' ORDER BY name")) {
    const std::string name = table.substr(table.find('=') + 1);
    const auto columns = columns_of(golden, name);
    auto rows = raw.rows(fmt::format("SELECT {} FROM {}", fmt::join(columns, ", "), name));
    std::sort(rows.begin(), rows.end());
    for (auto& r : rows) out.push_back(name + ": " + r);
  }
  return out;
}

// `written` without the object members `golden` does not have: fields added
// since the golden file was written.
nlohmann::json only_golden_fields(const nlohmann::json& written, const nlohmann::json& golden) {
  if (written.is_object() && golden.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, value] : written.items()) {
      if (golden.contains(key)) out[key] = only_golden_fields(value, golden[key]);
    }
    return out;
  }
  if (written.is_array() && golden.is_array() && written.size() == golden.size()) {
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < written.size(); ++i)
      out.push_back(only_golden_fields(written[i], golden[i]));
    return out;
  }
  return written;
}

std::string without_generated_line(const std::string& html) {
  return std::regex_replace(html, std::regex("generated [0-9T:.Z-]+"), "generated <time>");
}

// Works in a fresh directory holding g.db, the golden database rebuilt from
// its dump, so that relative paths in messages match the golden files.
class GoldenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    old_cwd_ = fs::current_path();
    fs::current_path(dir_.path());
    RawDb(kGolden).exec(read_file(kData / "results_v1.sql") +
                        fmt::format("PRAGMA application_id = {}; PRAGMA user_version = 1;",
                                    results::kApplicationId));
  }
  void TearDown() override { fs::current_path(old_cwd_); }

  static constexpr const char* kGolden = "g.db";
  testing::TempDir dir_{"golden-test"};
  fs::path old_cwd_;
};

TEST_F(GoldenTest, ANewDatabaseHasTheVersionOneSchemaPlusAddedColumns) {
  results::ResultsDb::open_for_writing("new.db");
  EXPECT_EQ(schema_of("new.db", kGolden), schema_of(kGolden, kGolden));
}

// Tables added since version 1 are created in an old database by its first
// writer, exactly as a new database declares them.
TEST_F(GoldenTest, AnOldDatabaseGainsTheAddedTablesAsANewOneHasThem) {
  const std::string added =
      "SELECT type, name, sql FROM sqlite_schema WHERE tbl_name = "
      "'machine_limits' ORDER BY type, name";
  ASSERT_TRUE(RawDb(kGolden).rows(added).empty()) << "the golden database predates the table";
  results::ResultsDb::open_for_writing("new.db");
  results::ResultsDb::open_for_writing(kGolden);
  const auto made = RawDb("new.db").rows(added);
  EXPECT_EQ(made.size(), 2u) << "the table and its index";
  EXPECT_EQ(RawDb(kGolden).rows(added), made);
}

// What the runner does for each case, replayed from the golden database.
void replay(results::ResultsDb& from, results::ResultsDb& to) {
  auto suites = from.list_suites();
  std::reverse(suites.begin(), suites.end());  // oldest first, as they were written
  for (const auto& suite : suites) {
    const int64_t suite_id = to.begin_suite(suite.info);
    for (const auto& run : from.list_runs(suite.id)) {
      if (run.status == results::RunStatus::kSkipped) {
        to.mark_skipped(suite_id, run.run_case, run.error);
        continue;
      }
      const int64_t run_id = to.begin_run(suite_id, run.run_case);
      to.add_poller_samples(run_id, from.poller_samples(run.id));
      const auto rows = from.allreduce_rows(run.id);
      if (!rows.empty()) to.add_allreduce_rows(run_id, rows);
      const auto summary = from.run_summary(run.id);
      to.finish_run(run_id, run.status, run.exit_code.value_or(0), run.error,
                    summary ? &*summary : nullptr);
    }
    to.finish_suite(suite_id);
  }
}

TEST_F(GoldenTest, ReplayingTheRunsWritesTheSameRows) {
  {
    auto from = results::ResultsDb::open_for_reading(kGolden);
    auto to = results::ResultsDb::open_for_writing("new.db");
    replay(from, to);
  }
  const auto golden = rows_of(kGolden, kGolden), replayed = rows_of("new.db", kGolden);
  EXPECT_EQ(golden.size(), replayed.size());
  for (size_t i = 0; i < std::min(golden.size(), replayed.size()); ++i) {
    EXPECT_EQ(golden[i], replayed[i]) << "row " << i;
  }
}

// Old summaries still read; written again they hold the same bytes, plus
// the fields added since.
TEST_F(GoldenTest, SummariesReadAndWriteByteForByte) {
  for (const char* name : {"sharded.summary.json", "failed.summary.json"}) {
    const auto summary = results::load_run_summary(kData / name);
    results::save_run_summary(summary, name);
    const auto golden = nlohmann::json::parse(read_file(kData / name));
    EXPECT_EQ(only_golden_fields(nlohmann::json::parse(read_file(name)), golden).dump(2) + "\n",
              read_file(kData / name))
        << name;
  }
}

std::vector<analysis::SuiteData> golden_suites(results::ResultsDb& db) {
  std::vector<analysis::SuiteData> suites;
  for (int64_t id : analysis::resolve_suites(db, "all"))
    suites.push_back(analysis::load_suite(db, id));
  return suites;
}

TEST_F(GoldenTest, ReportsAreUnchanged) {
  auto db = results::ResultsDb::open_for_reading(kGolden);
  const auto suites = golden_suites(db);
  EXPECT_EQ(report::render_markdown(suites), read_file(kData / "report.md"));
  EXPECT_EQ(without_generated_line(report::render_html(suites, std::nullopt).html),
            without_generated_line(read_file(kData / "report.html")));
  const auto gnuplot = report::find_gnuplot();
  if (!gnuplot) GTEST_SKIP() << "gnuplot not installed: charts not compared";
  EXPECT_EQ(without_generated_line(report::render_html(suites, gnuplot).html),
            without_generated_line(read_file(kData / "report_charts.html")));
}

TEST_F(GoldenTest, BaselinesAndChecksAreUnchanged) {
  const auto current = check::load_check_suite(kGolden, "1");
  const auto golden = nlohmann::json::parse(read_file(kData / "baseline.json"));
  EXPECT_EQ(only_golden_fields(check::baseline_to_json(current), golden).dump(2) + "\n",
            read_file(kData / "baseline.json"));
  fs::copy_file(kData / "baseline.json", "baseline.json");
  const auto baseline = check::load_baseline("baseline.json");
  check::CheckOptions options;
  options.ratios = {
      check::parse_ratio_rule("step_time:sharded-r2-overlap-b0.001-t1/naive-r1-fused-t1<=100")};
  EXPECT_EQ(check::check_table_text(check::run_check(&baseline, current, options)),
            read_file(kData / "check.txt"));
}

}  // namespace
}  // namespace trainscope
