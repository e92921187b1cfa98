// The results database schema and its migrations.
//
// The schema version lives in `PRAGMA user_version`; `PRAGMA application_id`
// marks the file as a trainscope results database so that some other SQLite
// file is refused instead of being "migrated". migrate() applies each missing
// migration in its own transaction (BEGIN IMMEDIATE, re-checking the version
// inside it so two openers cannot both apply a step). To change the schema,
// append a migration to the list in schema.cpp and bump kSchemaVersion; never
// edit a migration that has shipped.
//
// Thread-safety: operates on the Connection it is given (see sqlite.h).
#ifndef TRAINSCOPE_RESULTS_SCHEMA_H_
#define TRAINSCOPE_RESULTS_SCHEMA_H_

#include <cstdint>

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

// Brings `db` up to kSchemaVersion (after check_schema_compatible). Each step
// commits on its own: a failure leaves the database at the last good version.
void migrate(sqlite::Connection& db);

}  // namespace trainscope::results

#endif  // TRAINSCOPE_RESULTS_SCHEMA_H_
