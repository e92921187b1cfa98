// SQL text for the results database's writers (results_db.cpp and
// comparison_store.cpp): the column lists and INSERT statements derived from
// the records' columns (results/sql_fields.h).
//
// Thread-safety: pure functions.
#ifndef TRAINSCOPE_RESULTS_SQL_STATEMENTS_H_
#define TRAINSCOPE_RESULTS_SQL_STATEMENTS_H_

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "results/sql_fields.h"

namespace trainscope::results {

// "a, b, c" for `columns`.
inline std::string names_of(const std::vector<ColumnDef>& columns) {
  std::vector<std::string> names;
  for (const auto& c : columns) names.push_back(c.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

// "?1, ?2, ?3" for `count` columns, numbered from `first`.
inline std::string placeholders(size_t count, int first = 1) {
  std::vector<std::string> p;
  for (size_t i = 0; i < count; ++i) p.push_back(fmt::format("?{}", first + static_cast<int>(i)));
  return fmt::format("{}", fmt::join(p, ", "));
}

// INSERT INTO table (keys..., the record's columns...) VALUES (?1, ...).
inline std::string insert_sql(std::string_view table, std::vector<ColumnDef> columns,
                              const std::vector<ColumnDef>& record) {
  columns.insert(columns.end(), record.begin(), record.end());
  return fmt::format("INSERT INTO {} ({}) VALUES ({})", table, names_of(columns),
                     placeholders(columns.size()));
}

// Key columns named `names`, for insert_sql.
inline std::vector<ColumnDef> keys(std::initializer_list<const char*> names) {
  std::vector<ColumnDef> out;
  for (const char* n : names) out.push_back({n, ""});
  return out;
}

}  // namespace trainscope::results

#endif  // TRAINSCOPE_RESULTS_SQL_STATEMENTS_H_
