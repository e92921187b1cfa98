// The SQL half of the field tables (results/fields.h): a record's columns for
// CREATE TABLE, binding it to an INSERT and reading it from a SELECT, all
// derived from Fields<T>. Internal to results/.
//
// Column names: a scalar field's column is its name (or Storage::column);
// inside a nested record or an EnumArray the enclosing fields' Storage::prefix
// and ::suffix wrap it (RankResult::step_time.median -> step_time_median_s).
// Column types: integers INTEGER NOT NULL (NULL-able with minus_one_is_null),
// doubles REAL (NULL is NaN), strings TEXT NOT NULL, enums TEXT NOT NULL with an
// optional CHECK of the allowed names, JSON values, lists and maps TEXT NOT
// NULL CHECK (json_valid(col)) (NULL, in a column added after the row was
// written, reads as an empty value), optionals their value's type without NOT NULL.
// A record declared `nullable` (the run summary's columns of a run that has
// none) has every column NULL-able. A NULL integer or string (a column added
// after the row was written) leaves the member's default (-1 where that is
// minus_one_is_null); a column added with Storage::default_value fills the
// rows it already has with that value.
//
// Thread-safety: pure functions; Statements belong to their connection's thread.
#ifndef TRAINSCOPE_RESULTS_SQL_FIELDS_H_
#define TRAINSCOPE_RESULTS_SQL_FIELDS_H_

#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "results/fields.h"
#include "results/sqlite.h"

namespace trainscope::results {

struct ColumnDef {
  std::string name;
  std::string decl;  // type and constraints, e.g. "INTEGER NOT NULL"
};

// Where a record's columns go: name affixes, and whether every column may be NULL.
struct Scope {
  std::string prefix = {};
  std::string suffix = {};
  bool nullable = false;

  Scope nested(const Storage& s) const {
    return {prefix + std::string(s.prefix), std::string(s.suffix) + suffix, nullable};
  }
  std::string column(std::string_view name, const Storage& s) const {
    return prefix + std::string(s.column.empty() ? name : s.column) + suffix;
  }
};

// The column of a scalar and how it is bound and read. columns() appends the
// definitions; bind() and read() advance the 1-based parameter index and the
// 0-based column index by the columns they use.
template <typename T>
struct SqlCodec;

inline std::string json_column_decl(const std::string& column, bool nullable) {
  return nullable ? fmt::format("TEXT CHECK ({0} IS NULL OR json_valid({0}))", column)
                  : fmt::format("TEXT NOT NULL CHECK (json_valid({}))", column);
}

template <typename T>
requires std::is_integral_v<T>
struct SqlCodec<T> {
  static void columns(std::vector<ColumnDef>& out, const Scope& scope, std::string_view name,
                      const Storage& s) {
    const bool nullable = scope.nullable || s.minus_one_is_null;
    out.push_back({scope.column(name, s), nullable ? "INTEGER" : "INTEGER NOT NULL"});
  }
  static void bind(sqlite::Statement& st, int& index, const T& v, const Storage& s) {
    if (s.minus_one_is_null && static_cast<int64_t>(v) == -1) {
      st.bind_null(index++);
    } else {
      st.bind(index++, static_cast<int64_t>(v));
    }
  }
  // NULL (a column added after the row was written): -1 where that means
  // unknown, else the member keeps its default.
  static void read(sqlite::Statement& st, int& column, T& v, const Storage& s) {
    const auto value = st.column_optional_int64(column++);
    if (value) {
      v = static_cast<T>(*value);
    } else if (s.minus_one_is_null) {
      v = static_cast<T>(-1);
    }
  }
};

template <>
struct SqlCodec<double> {
  static void columns(std::vector<ColumnDef>& out, const Scope& scope, std::string_view name,
                      const Storage& s) {
    out.push_back(
        {scope.column(name, s), s.not_null && !scope.nullable ? "REAL NOT NULL" : "REAL"});
  }
  static void bind(sqlite::Statement& st, int& index, double v, const Storage&) {
    st.bind(index++, v);
  }
  static void read(sqlite::Statement& st, int& column, double& v, const Storage&) {
    v = st.column_double(column++);
  }
};

template <>
struct SqlCodec<std::string> {
  static void columns(std::vector<ColumnDef>& out, const Scope& scope, std::string_view name,
                      const Storage& s) {
    std::string decl = scope.nullable ? "TEXT" : "TEXT NOT NULL";
    if (!s.default_value.empty()) decl += fmt::format(" DEFAULT {}", s.default_value);
    out.push_back({scope.column(name, s), decl});
  }
  static void bind(sqlite::Statement& st, int& index, const std::string& v, const Storage&) {
    st.bind(index++, v);
  }
  // NULL (a column added after the row was written, or a run without a
  // summary): the member keeps its default, as integers do.
  static void read(sqlite::Statement& st, int& column, std::string& v, const Storage&) {
    if (!st.is_null(column)) v = st.column_text(column);
    ++column;
  }
};

// Values stored as JSON text: JSON objects, lists and maps.
template <typename T>
struct SqlJsonText {
  static void columns(std::vector<ColumnDef>& out, const Scope& scope, std::string_view name,
                      const Storage& s) {
    const std::string column = scope.column(name, s);
    out.push_back({column, json_column_decl(column, scope.nullable)});
  }
  static void bind(sqlite::Statement& st, int& index, const T& v, const Storage&) {
    st.bind(index++, to_json_value(v).dump());
  }
  static void read(sqlite::Statement& st, int& column, T& v, const Storage&) {
    if (st.is_null(column)) {  // a column added after the row was written
      v = T{};
      ++column;
      return;
    }
    const std::string name = st.column_name(column);
    const nlohmann::json j = parse_json(st.column_text(column++), fmt::format("column {}", name));
    JsonReader::rethrow_in(fmt::format("column {}", name),
                           [&] { from_json_value(JsonReader(j), v); });
  }
};
template <>
struct SqlCodec<nlohmann::json> : SqlJsonText<nlohmann::json> {};
template <typename T>
struct SqlCodec<std::vector<T>> : SqlJsonText<std::vector<T>> {};
template <typename T>
struct SqlCodec<std::map<std::string, T>> : SqlJsonText<std::map<std::string, T>> {};

template <NamedEnum E>
struct SqlCodec<E> {
  static void columns(std::vector<ColumnDef>& out, const Scope& scope, std::string_view name,
                      const Storage& s, std::span<const E> allowed = {}) {
    const std::string column = scope.column(name, s);
    std::vector<std::string> quoted;
    if (allowed.empty() && EnumNames<E>::sql_check) {
      for (std::string_view n : EnumNames<E>::names) quoted.push_back(fmt::format("'{}'", n));
    }
    for (E e : allowed) quoted.push_back(fmt::format("'{}'", enum_name(e)));
    std::string decl = scope.nullable ? "TEXT" : "TEXT NOT NULL";
    if (!quoted.empty()) {
      decl += scope.nullable ? fmt::format(" CHECK ({0} IS NULL OR {0} IN ({1}))", column,
                                           fmt::join(quoted, ", "))
                             : fmt::format(" CHECK ({} IN ({}))", column, fmt::join(quoted, ", "));
    }
    out.push_back({column, decl});
  }
  static void bind(sqlite::Statement& st, int& index, E v, const Storage&) {
    st.bind(index++, enum_name(v));
  }
  static void read(sqlite::Statement& st, int& column, E& v, const Storage&) {
    const std::string name = st.column_text(column);
    const auto parsed = parse_enum<E>(name);
    if (!parsed) {
      throw Error(fmt::format("column {} holds '{}', not one of: {}", st.column_name(column), name,
                              fmt::join(EnumNames<E>::names, ", ")));
    }
    ++column;
    v = *parsed;
  }
};

template <typename T>
struct SqlCodec<std::optional<T>> {
  static void columns(std::vector<ColumnDef>& out, const Scope& scope, std::string_view name,
                      const Storage& s) {
    Scope nullable = scope;
    nullable.nullable = true;
    SqlCodec<T>::columns(out, nullable, name, s);
  }
  static void bind(sqlite::Statement& st, int& index, const std::optional<T>& v, const Storage& s) {
    if (v) {
      SqlCodec<T>::bind(st, index, *v, s);
    } else {
      st.bind_null(index++);
    }
  }
  static void read(sqlite::Statement& st, int& column, std::optional<T>& v, const Storage& s) {
    v.reset();
    if (st.is_null(column)) {
      ++column;
    } else {
      SqlCodec<T>::read(st, column, v.emplace(), s);
    }
  }
};

// Only the scalar options of a Storage: what an EnumArray's items inherit.
inline Storage scalar_options(const Storage& s) {
  Storage out;
  out.minus_one_is_null = s.minus_one_is_null;
  out.not_null = s.not_null;
  return out;
}

template <NamedEnum E, typename T>
struct SqlCodec<EnumArray<E, T>> {
  static void columns(std::vector<ColumnDef>& out, const Scope& scope, std::string_view,
                      const Storage& s) {
    const Scope inner = scope.nested(s);
    for (std::string_view n : EnumNames<E>::names)
      SqlCodec<T>::columns(out, inner, n, scalar_options(s));
  }
  static void bind(sqlite::Statement& st, int& index, const EnumArray<E, T>& v, const Storage& s) {
    for (const T& item : v.values) SqlCodec<T>::bind(st, index, item, scalar_options(s));
  }
  static void read(sqlite::Statement& st, int& column, EnumArray<E, T>& v, const Storage& s) {
    for (T& item : v.values) SqlCodec<T>::read(st, column, item, scalar_options(s));
  }
};

// A record's fields, inline: the columns of each stored field in table order.
template <Described T>
struct SqlCodec<T> {
  static void columns(std::vector<ColumnDef>& out, const Scope& scope, std::string_view,
                      const Storage& s) {
    const Scope inner = scope.nested(s);
    for_each_field<T>([&](const auto& f) {
      using M = std::remove_cvref_t<decltype(std::declval<T>().*f.member)>;
      if (f.sql.not_stored) return;
      if (f.sql.count_only) {
        SqlCodec<int64_t>::columns(out, inner, f.name, f.sql);
      } else if constexpr (NamedEnum<M>) {
        SqlCodec<M>::columns(out, inner, f.name, f.sql, f.allowed);
      } else {
        SqlCodec<M>::columns(out, inner, f.name, f.sql);
      }
    });
  }
  static void bind(sqlite::Statement& st, int& index, const T& v, const Storage&) {
    for_each_field<T>([&](const auto& f) {
      using M = std::remove_cvref_t<decltype(v.*f.member)>;
      if (f.sql.not_stored) return;
      if constexpr (requires { (v.*f.member).size(); }) {
        if (f.sql.count_only) {
          st.bind(index++, static_cast<int64_t>((v.*f.member).size()));
          return;
        }
      }
      SqlCodec<M>::bind(st, index, v.*f.member, f.sql);
    });
  }
  static void read(sqlite::Statement& st, int& column, T& v, const Storage&) {
    for_each_field<T>([&](const auto& f) {
      using M = std::remove_cvref_t<decltype(v.*f.member)>;
      if (f.sql.not_stored) return;
      if constexpr (requires { (v.*f.member).resize(0); }) {
        if (f.sql.count_only) {
          (v.*f.member).clear();
          (v.*f.member).resize(static_cast<std::size_t>(st.column_int64(column++)));
          return;
        }
      }
      SqlCodec<M>::read(st, column, v.*f.member, f.sql);
    });
  }
};

// ---------------------------------------------------------------------------
// A record's columns, for CREATE TABLE and the statements below.
template <Described T>
std::vector<ColumnDef> columns_of(Scope scope = {}) {
  std::vector<ColumnDef> out;
  SqlCodec<T>::columns(out, scope, "", Storage{});
  return out;
}

// Binds the record's columns from parameter `index` on; returns the next index.
template <Described T>
int bind_record(sqlite::Statement& st, int index, const T& v) {
  SqlCodec<T>::bind(st, index, v, Storage{});
  return index;
}

// Reads the record's columns from column `column` on; returns the next column.
template <Described T>
int read_record(sqlite::Statement& st, int column, T& v) {
  SqlCodec<T>::read(st, column, v, Storage{});
  return column;
}

}  // namespace trainscope::results

#endif  // TRAINSCOPE_RESULTS_SQL_FIELDS_H_
