// The results database schema and its migrations.
//
// The tables are declared in schema.cpp as key columns plus the columns of the
// records they hold, which come from the records' field tables (results/
// fields.h): adding a field to a record adds its column. Version 1 creates the
// tables as declared; a database made before a column was declared gets it
// from add_missing_columns() (NULL in the rows it already has), and one made
// before a table was declared gets the table, empty (machine_limits). Readers
// of such a database before it is next opened for writing see no rows.
//
// The schema version lives in `PRAGMA user_version`; `PRAGMA application_id`
// marks the file as a trainscope results database so that some other SQLite
// file is refused instead of being "migrated". migrate() applies each missing
// migration in its own transaction (BEGIN IMMEDIATE, re-checking the version
// inside it so two openers cannot both apply a step). A change that is not
// an added column (a rename, a new constraint) is a migration step appended
// in schema.cpp with kSchemaVersion bumped; never edit a step that has shipped.
//
// Thread-safety: operates on the Connection it is given (see sqlite.h).
#ifndef TRAINSCOPE_RESULTS_SCHEMA_H_
#define TRAINSCOPE_RESULTS_SCHEMA_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "results/sql_fields.h"
#include "results/sqlite.h"

namespace trainscope::results {

// Version of the schema this build reads and writes.
inline constexpr int kSchemaVersion = 1;

// "TSRD" as a big-endian integer, stored in PRAGMA application_id.
inline constexpr int32_t kApplicationId = 0x54535244;

// The database's user_version.
int schema_version(sqlite::Connection& db);

// Throws trainscope::Error if `db` is not a trainscope results database or has
// a schema newer than kSchemaVersion. An empty database passes.
void check_schema_compatible(sqlite::Connection& db);

// Brings `db` up to kSchemaVersion (after check_schema_compatible), then adds
// missing columns. Each step commits on its own: a failure leaves the
// database at the last good version.
void migrate(sqlite::Connection& db);

// One table: its columns (keys first, then the records' columns), table
// constraints and indexes.
struct TableSpec {
  std::string name;
  std::vector<ColumnDef> columns;
  std::vector<std::string> constraints;  // PRIMARY KEY (...), FOREIGN KEY ...
  bool without_rowid = false;
  std::vector<std::string> indexes;  // CREATE INDEX statements
  std::string create_sql() const;
};
const std::vector<TableSpec>& table_specs();

// The columns each table of `db` has, by table name.
std::map<std::string, std::set<std::string>, std::less<>> existing_columns(sqlite::Connection& db);
// ALTER TABLE ... ADD COLUMN for every declared column `db` lacks; CREATE
// TABLE for every declared table it lacks.
void add_missing_columns(sqlite::Connection& db);

}  // namespace trainscope::results

#endif  // TRAINSCOPE_RESULTS_SCHEMA_H_
