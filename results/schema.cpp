#include "results/schema.h"

#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "base/check.h"
#include "results/comparison_records.h"
#include "results/machine_limits.h"
#include "results/simulation_records.h"
#include "results/records.h"
#include "results/db_records.h"

namespace trainscope::results {

namespace {

ColumnDef id_column() { return {"id", "INTEGER PRIMARY KEY"}; }
ColumnDef parent_column(std::string_view name, std::string_view table) {
  return {std::string(name),
          fmt::format("INTEGER NOT NULL REFERENCES {}(id) ON DELETE CASCADE", table)};
}
ColumnDef integer_column(std::string_view name) { return {std::string(name), "INTEGER NOT NULL"}; }

std::vector<ColumnDef> concat(std::initializer_list<std::vector<ColumnDef>> parts) {
  std::vector<ColumnDef> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// Conventions: times are seconds (REAL), memory is bytes (INTEGER),
// timestamps are ISO-8601 UTC text, JSON columns are text checked with
// json_valid. A NULL measurement means unknown or NaN.
std::vector<TableSpec> make_tables() {
  // The phase of a rank_phase_stats row, with the phases' CHECK.
  std::vector<ColumnDef> phase;
  SqlCodec<profiler::Phase>::columns(phase, {}, "phase", {});
  const Scope seconds{.suffix = "_s"};
  return {
      {"suites", concat({{id_column()}, columns_of<SuiteInfo>()}), {}, false, {}},
      {"runs",
       concat({{id_column(), parent_column("suite_id", "suites")},
               columns_of<RunRow>(),
               columns_of<RunSummary>({.nullable = true})}),
       {},
       false,
       {"CREATE INDEX runs_suite_id ON runs(suite_id)",
        "CREATE INDEX runs_status ON runs(status)"}},
      {"rank_results",
       concat({{parent_column("run_id", "runs")}, columns_of<RankResult>()}),
       {"PRIMARY KEY (run_id, rank)"},
       true,
       {}},
      {"rank_phase_stats",
       concat({{integer_column("run_id"), integer_column("rank")},
               phase,
               columns_of<TimeStats>(seconds)}),
       {"PRIMARY KEY (run_id, rank, phase)",
        "FOREIGN KEY (run_id, rank) REFERENCES rank_results(run_id, rank) ON DELETE CASCADE"},
       true,
       {}},
      {"steps",
       concat(
           {{parent_column("run_id", "runs"), integer_column("rank")}, columns_of<StepRecord>()}),
       {"PRIMARY KEY (run_id, rank, step)"},
       true,
       {}},
      {"val_losses",
       concat({{parent_column("run_id", "runs")}, columns_of<ValLoss>()}),
       {"PRIMARY KEY (run_id, step)"},
       true,
       {}},
      {"poller_samples",
       concat(
           {{id_column(), parent_column("run_id", "runs")}, columns_of<profiler::ProcessSample>()}),
       {},
       false,
       {"CREATE INDEX poller_samples_run_id ON poller_samples(run_id, t_s)"}},
      {"allreduce_rows",
       concat({{id_column(), parent_column("run_id", "runs")}, columns_of<AllReduceRow>()}),
       {},
       false,
       {"CREATE INDEX allreduce_rows_run_id ON allreduce_rows(run_id, size_bytes)"}},
      // suite_id NULL: measured by `trainscope doctor --db`, not by a suite.
      {"machine_limits",
       concat({{id_column(), {"suite_id", "INTEGER REFERENCES suites(id) ON DELETE CASCADE"}},
               columns_of<MachineLimit>()}),
       {},
       false,
       {"CREATE INDEX machine_limits_suite_id ON machine_limits(suite_id)"}},
      // A simulator's step times for a suite's step (results/simulation_records.h).
      {"simulations",
       concat({{id_column(), parent_column("suite_id", "suites")}, columns_of<SimulatedStep>()}),
       {},
       false,
       {"CREATE INDEX simulations_suite_id ON simulations(suite_id)"}},
      // Comparisons of two builds (results/comparison_records.h).
      {"comparisons", concat({{id_column()}, columns_of<ComparisonInfo>()}), {}, false, {}},
      {"comparison_pairs",
       concat({{parent_column("comparison_id", "comparisons")}, columns_of<ComparisonPair>()}),
       {"PRIMARY KEY (comparison_id, case_name, pair)"},
       false,
       {}},
      {"comparison_cases",
       concat({{parent_column("comparison_id", "comparisons")}, columns_of<ComparisonCase>()}),
       {"PRIMARY KEY (comparison_id, case_name)"},
       false,
       {}},
      {"work_counts",
       concat({{parent_column("comparison_id", "comparisons")}, columns_of<WorkCount>()}),
       {"PRIMARY KEY (comparison_id, side, repeat, case_name, rank, phase)"},
       false,
       {}},
  };
}

// The whole schema as CREATE statements, from the tables.
std::string schema_sql() {
  std::string sql;
  for (const TableSpec& t : table_specs()) {
    sql += t.create_sql() + ";\n";
    for (const auto& index : t.indexes) sql += index + ";\n";
  }
  return sql;
}

// Version 1 is the tables as declared; later versions append steps that
// change what the field tables cannot (renames, new tables' data...).
// Columns added to a field table need no step: add_missing_columns.
const std::vector<std::pair<int, std::string>>& migrations() {
  static const std::vector<std::pair<int, std::string>> steps = {{1, schema_sql()}};
  return steps;
}

}  // namespace

std::string TableSpec::create_sql() const {
  std::string sql = fmt::format("CREATE TABLE {} (\n", name);
  std::vector<std::string> lines;
  for (const auto& c : columns) lines.push_back(fmt::format("  {} {}", c.name, c.decl));
  for (const auto& c : constraints) lines.push_back("  " + c);
  sql += fmt::format("{}\n)", fmt::join(lines, ",\n"));
  if (without_rowid) sql += " WITHOUT ROWID";
  return sql;
}

const std::vector<TableSpec>& table_specs() {
  static const std::vector<TableSpec> tables = make_tables();
  return tables;
}

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
      throw Error(
          fmt::format("{} is a SQLite database but not a trainscope results database", file));
    }
    if (objects != 0) {
      throw Error(fmt::format(
          "{} is a trainscope results database whose schema version was reset to 0 (PRAGMA "
          "user_version): it is neither read nor migrated; if nothing else was changed, set "
          "PRAGMA user_version = {} again",
          file, kSchemaVersion));
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
  static_assert(kSchemaVersion == 1, "one migration step per schema version, in order");
  for (const auto& [version, sql] : migrations()) {
    if (schema_version(db) >= version) continue;
    sqlite::Transaction transaction(db);
    // Another process may have migrated while we waited for the lock.
    if (schema_version(db) >= version) continue;
    db.exec(sql, fmt::format("migrating to schema version {}", version));
    db.exec(fmt::format("PRAGMA application_id = {}; PRAGMA user_version = {}", kApplicationId,
                        version),
            "recording the schema version");
    transaction.commit();
  }
  TS_CHECK(schema_version(db) == kSchemaVersion)
      << "migration ended at version " << schema_version(db);
  add_missing_columns(db);
}

std::map<std::string, std::set<std::string>, std::less<>> existing_columns(sqlite::Connection& db) {
  std::map<std::string, std::set<std::string>, std::less<>> out;
  for (const TableSpec& t : table_specs()) {
    sqlite::Statement s(db, fmt::format("SELECT name FROM pragma_table_info('{}')", t.name));
    auto& names = out[t.name];
    while (s.step(fmt::format("reading the columns of table {}", t.name)))
      names.insert(s.column_text(0));
  }
  return out;
}

namespace {

// Rows made before the column existed hold NULL: no NOT NULL, and a JSON
// column's check lets NULL through (SQLite's json_valid(NULL) is 0 before 3.45).
std::string added_column_decl(const ColumnDef& c) {
  if (c.decl == json_column_decl(c.name, false)) return json_column_decl(c.name, true);
  std::string decl = c.decl;
  if (auto at = decl.find(" NOT NULL"); at != std::string::npos) decl.erase(at, 9);
  return decl;
}

}  // namespace

void add_missing_columns(sqlite::Connection& db) {
  sqlite::Transaction transaction(db);
  const auto existing = existing_columns(db);
  for (const TableSpec& t : table_specs()) {
    // A table declared after the database was made: only ever added to, as
    // a column is, so it is created here rather than by a migration step.
    if (existing.at(t.name).empty()) {
      db.exec(t.create_sql(), fmt::format("creating table {}", t.name));
      for (const auto& index : t.indexes) db.exec(index, fmt::format("indexing table {}", t.name));
      continue;
    }
    for (const ColumnDef& c : t.columns) {
      if (existing.at(t.name).contains(c.name)) continue;
      db.exec(fmt::format("ALTER TABLE {} ADD COLUMN {} {}", t.name, c.name, added_column_decl(c)),
              fmt::format("adding column {} to table {}", c.name, t.name));
    }
  }
  transaction.commit();
}

}  // namespace trainscope::results
