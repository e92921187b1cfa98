// ResultsDb's comparisons of two builds (results/comparison_records.h): the
// tables comparisons, comparison_pairs, comparison_cases and work_counts.
#include <fmt/format.h>

#include "base/check.h"
#include "base/json_reader.h"
#include "results/results_db.h"
#include "results/sql_fields.h"
#include "results/sql_statements.h"
#include "results/sqlite.h"

namespace trainscope::results {

namespace {

using sqlite::Connection;
using sqlite::Statement;
using sqlite::Transaction;

void require_comparison(Connection& db, const std::filesystem::path& path, int64_t id) {
  Statement exists(db, "SELECT 1 FROM comparisons WHERE id = ?1");
  if (!exists.bind(1, id).step(fmt::format("reading comparison {}", id))) {
    throw Error(fmt::format("results database {} has no comparison {}", path.string(), id));
  }
}

// Inserts `rows` into `table` as rows of comparison `id`, in one transaction.
template <typename Row>
void insert_comparison_rows(Connection& db, const std::filesystem::path& path,
                            std::string_view table, int64_t id, std::span<const Row> rows) {
  Transaction t(db);
  require_comparison(db, path, id);
  Statement s(db, insert_sql(table, keys({"comparison_id"}), columns_of<Row>()));
  for (const Row& row : rows) {
    bind_record(s.bind(1, id), 2, row);
    s.run(fmt::format("storing the {} of comparison {}", table, id));
  }
  t.commit();
}

}  // namespace

int64_t ResultsDb::begin_comparison(const ComparisonInfo& info) {
  require_writable();
  ComparisonInfo row = info;
  row.started_at = utc_timestamp();
  row.finished_at.reset();
  row.verdict.clear();
  Transaction t(*db_);
  Statement s(*db_, insert_sql("comparisons", {}, columns_of<ComparisonInfo>()));
  bind_record(s, 1, row);
  s.run(fmt::format("recording the comparison of suite '{}'", info.suite));
  const int64_t id = db_->last_insert_rowid();
  t.commit();
  return id;
}

void ResultsDb::add_comparison_pair(int64_t comparison_id, const ComparisonPair& pair) {
  require_writable();
  insert_comparison_rows(*db_, path(), "comparison_pairs", comparison_id,
                         std::span<const ComparisonPair>(&pair, 1));
}

void ResultsDb::add_work_counts(int64_t comparison_id, std::span<const WorkCount> counts) {
  require_writable();
  insert_comparison_rows(*db_, path(), "work_counts", comparison_id, counts);
}

void ResultsDb::finish_comparison(int64_t comparison_id, std::string_view verdict,
                                  std::span<const ComparisonCase> cases) {
  require_writable();
  Transaction t(*db_);
  require_comparison(*db_, path(), comparison_id);
  Statement s(*db_, insert_sql("comparison_cases", keys({"comparison_id"}),
                               columns_of<ComparisonCase>()));
  for (const ComparisonCase& c : cases) {
    bind_record(s.bind(1, comparison_id), 2, c);
    s.run(fmt::format("storing case '{}' of comparison {}", c.case_name, comparison_id));
  }
  Statement update(*db_, "UPDATE comparisons SET verdict = ?1, finished_at = ?2 WHERE id = ?3");
  update.bind(1, verdict).bind(2, utc_timestamp()).bind(3, comparison_id);
  update.run(fmt::format("finishing comparison {}", comparison_id));
  t.commit();
}

std::vector<ComparisonRow> ResultsDb::list_comparisons() {
  if (existing_columns_.at("comparisons").empty()) return {};  // made before comparisons
  Statement s(*db_, fmt::format("SELECT id, {} FROM comparisons ORDER BY id DESC",
                                select_list("comparisons", columns_of<ComparisonInfo>())));
  std::vector<ComparisonRow> rows;
  while (s.step("listing comparisons")) {
    ComparisonRow& r = rows.emplace_back();
    r.id = s.column_int64(0);
    JsonReader::rethrow_in(fmt::format("results database {}, comparison {}", path().string(), r.id),
                           [&] { read_record(s, 1, r.info); });
  }
  return rows;
}

std::optional<ComparisonRow> ResultsDb::comparison(int64_t comparison_id) {
  for (ComparisonRow& row : list_comparisons()) {
    if (row.id == comparison_id) return std::move(row);
  }
  return std::nullopt;
}

namespace {

template <typename Row>
std::vector<Row> comparison_rows(Connection& db, const std::string& select, int64_t id,
                                 std::string_view table) {
  Statement s(db, select);
  s.bind(1, id);
  std::vector<Row> rows;
  while (s.step(fmt::format("reading the {} of comparison {}", table, id))) {
    read_record(s, 0, rows.emplace_back());
  }
  return rows;
}

}  // namespace

std::vector<ComparisonPair> ResultsDb::comparison_pairs(int64_t comparison_id) {
  if (existing_columns_.at("comparison_pairs").empty()) return {};
  return comparison_rows<ComparisonPair>(
      *db_,
      fmt::format("SELECT {} FROM comparison_pairs WHERE comparison_id = ?1 ORDER BY rowid",
                  select_list("comparison_pairs", columns_of<ComparisonPair>())),
      comparison_id, "pairs");
}

std::vector<ComparisonCase> ResultsDb::comparison_cases(int64_t comparison_id) {
  if (existing_columns_.at("comparison_cases").empty()) return {};
  return comparison_rows<ComparisonCase>(
      *db_,
      fmt::format("SELECT {} FROM comparison_cases WHERE comparison_id = ?1 ORDER BY rowid",
                  select_list("comparison_cases", columns_of<ComparisonCase>())),
      comparison_id, "cases");
}

std::vector<WorkCount> ResultsDb::work_counts(int64_t comparison_id) {
  if (existing_columns_.at("work_counts").empty()) return {};
  return comparison_rows<WorkCount>(
      *db_,
      fmt::format("SELECT {} FROM work_counts WHERE comparison_id = ?1 ORDER BY rowid",
                  select_list("work_counts", columns_of<WorkCount>())),
      comparison_id, "work counts");
}

}  // namespace trainscope::results
