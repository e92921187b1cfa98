// Declaring a record once. Every record that crosses a process boundary (run
// summaries, per-rank results, steps, sweep rows, poller samples, suite and
// run rows, baselines) lists its fields in one table, right after the struct:
//
//   struct Sample { double seconds = 0; int64_t bytes = kUnknown; };
//   template <> struct Fields<Sample> {
//     static constexpr auto table = std::tuple{
//         field("seconds", &Sample::seconds),
//         field("bytes", &Sample::bytes, {.minus_one_is_null = true}),
//     };
//   };
//
// and everything else is derived from that table: JSON writing and strict
// reading (to_json_value / from_json_value here, with the path of the value in
// every error) and the SQL columns, CREATE TABLE, INSERT binding and SELECT
// reading (results/sql_fields.h). Adding a figure to a record is one line in
// its table plus the code that produces it; a database made before the field
// existed gains the column when it is next opened for writing.
//
// A field's C++ type decides its encoding (JsonCodec here, SqlCodec in
// sql_fields.h): integers; doubles (NaN is JSON null and SQL NULL, JSON having
// no NaN); strings; enums by their names (EnumNames); JSON objects (SQL: text
// checked with json_valid); optionals (null when unset); lists and
// string-keyed maps (SQL: JSON text); nested records (SQL: their columns
// inline, see Storage::prefix); and EnumArray, one value per phase or memory
// category keyed by its name. What differs in SQL is said per field (Storage).
//
// A record may also declare `static void validate(const T&, const
// JsonReader&)` in its Fields: checks across fields, run after reading.
//
// Thread-safety: compile-time tables and pure functions.
#ifndef TRAINSCOPE_RESULTS_FIELDS_H_
#define TRAINSCOPE_RESULTS_FIELDS_H_

#include <algorithm>
#include <array>
#include <concepts>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/enum_names.h"
#include "base/json_reader.h"

namespace trainscope::results {

// ---------------------------------------------------------------------------
// Enums by name.

// Enums are stored by their names (base/enum_names.h: EnumNames).

// One T per value of E (a phase, a memory category), written as an object
// keyed by the values' names.
template <NamedEnum E, typename T>
struct EnumArray {
  std::array<T, enum_count<E>()> values{};

  T& operator[](E e) { return values[static_cast<std::size_t>(e)]; }
  const T& operator[](E e) const { return values[static_cast<std::size_t>(e)]; }
  bool operator==(const EnumArray&) const = default;
};

// ---------------------------------------------------------------------------
// Field tables.

// How a field is stored in SQL; JSON always uses the field's name.
struct Storage {
  std::string_view column = {};  // the column's name when it is not the field's
  // Nested records and EnumArrays: their columns are named prefix + name + suffix.
  std::string_view prefix = {};
  std::string_view suffix = {};
  bool minus_one_is_null = false;       // -1 (kUnknown, "not a rank") is stored as NULL
  bool not_null = false;                // a double that is never NaN: REAL NOT NULL
  std::string_view default_value = {};  // SQL DEFAULT clause
  bool count_only = false;              // a list stored as its length; its items are rows elsewhere
  bool not_stored = false;              // not a column: the items are rows of a child table
};

template <typename R, typename M>
struct Field {
  std::string_view name;
  M R::*member;
  Storage sql;
  bool may_be_absent = false;  // JSON: absent or null reads as the member's default
  std::span<const M> allowed;  // values accepted on reading; SQL CHECKs them too

  constexpr Field absent_ok() const {
    Field f = *this;
    f.may_be_absent = true;
    return f;
  }
  constexpr Field only(std::span<const M> values) const {
    Field f = *this;
    f.allowed = values;
    return f;
  }
};

template <typename R, typename M>
constexpr Field<R, M> field(std::string_view name, M R::*member, Storage sql = {}) {
  return Field<R, M>{name, member, sql, false, {}};
}

// Specialized once per record: `static constexpr auto table = std::tuple{...}`.
template <typename T>
struct Fields;

template <typename T>
concept Described = requires {
  Fields<T>::table;
};

// Calls f(field) for each field of T's table, in order.
template <Described T, typename F>
constexpr void for_each_field(F&& f) {
  std::apply([&](const auto&... fields) { (f(fields), ...); }, Fields<T>::table);
}

// ---------------------------------------------------------------------------
// JSON. JsonCodec<T>::write(value) -> json; JsonCodec<T>::read(reader, value)
// throws trainscope::Error naming the value's path.

template <typename T>
struct JsonCodec;

template <typename T>
nlohmann::json to_json_value(const T& value) {
  return JsonCodec<T>::write(value);
}
template <typename T>
void from_json_value(const JsonReader& reader, T& value) {
  JsonCodec<T>::read(reader, value);
}

template <typename T>
requires std::is_integral_v<T> || std::is_same_v<T, std::string>
struct JsonCodec<T> {
  static nlohmann::json write(const T& v) { return v; }
  static void read(const JsonReader& r, T& v) { v = r.get<T>(); }
};

template <>
struct JsonCodec<double> {
  static nlohmann::json write(double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
  }
  static void read(const JsonReader& r, double& v) {
    v = r.is_null() ? std::numeric_limits<double>::quiet_NaN() : r.get<double>();
  }
};

template <>
struct JsonCodec<nlohmann::json> {
  static nlohmann::json write(const nlohmann::json& v) { return v; }
  static void read(const JsonReader& r, nlohmann::json& v) {
    r.require_object();
    v = r.value();
  }
};

template <NamedEnum E>
struct JsonCodec<E> {
  static nlohmann::json write(E v) { return enum_name(v); }
  static void read(const JsonReader& r, E& v) {
    const std::string name = r.get<std::string>();
    const auto parsed = parse_enum<E>(name);
    if (!parsed) {
      r.fail(
          fmt::format("is '{}', expected one of: {}", name, fmt::join(EnumNames<E>::names, ", ")));
    }
    v = *parsed;
  }
};

template <typename T>
struct JsonCodec<std::optional<T>> {
  static nlohmann::json write(const std::optional<T>& v) {
    return v ? to_json_value(*v) : nlohmann::json(nullptr);
  }
  static void read(const JsonReader& r, std::optional<T>& v) {
    v.reset();
    if (!r.is_null()) from_json_value(r, v.emplace());
  }
};

template <typename T>
struct JsonCodec<std::vector<T>> {
  static nlohmann::json write(const std::vector<T>& v) {
    nlohmann::json out = nlohmann::json::array();
    for (const T& item : v) out.push_back(to_json_value(item));
    return out;
  }
  static void read(const JsonReader& r, std::vector<T>& v) {
    v.clear();
    v.resize(r.size());
    for (std::size_t i = 0; i < v.size(); ++i) from_json_value(r[i], v[i]);
  }
};

template <typename T>
struct JsonCodec<std::map<std::string, T>> {
  static nlohmann::json write(const std::map<std::string, T>& v) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, item] : v) out[key] = to_json_value(item);
    return out;
  }
  static void read(const JsonReader& r, std::map<std::string, T>& v) {
    r.require_object();
    v.clear();
    for (const auto& item : r.value().items()) from_json_value(r[item.key()], v[item.key()]);
  }
};

template <NamedEnum E, typename T>
struct JsonCodec<EnumArray<E, T>> {
  static nlohmann::json write(const EnumArray<E, T>& v) {
    nlohmann::json out = nlohmann::json::object();
    for (std::size_t i = 0; i < v.values.size(); ++i) {
      out[std::string(EnumNames<E>::names[i])] = to_json_value(v.values[i]);
    }
    return out;
  }
  static void read(const JsonReader& r, EnumArray<E, T>& v) {
    for (std::size_t i = 0; i < v.values.size(); ++i) {
      from_json_value(r[EnumNames<E>::names[i]], v.values[i]);
    }
  }
};

// The value `member` has in a default-constructed R: what a field that may
// be absent reads as when it is (an AllReduceRow written before the
// algorithm was recorded ran "mpi", not "").
template <typename R, typename M>
const M& default_member(M R::*member) {
  static const R defaults{};
  return defaults.*member;
}

// A field's value from its record's reader: absent fields, allowed values.
template <typename R, typename M>
void read_field(const JsonReader& record, const Field<R, M>& f, M& value) {
  if (f.may_be_absent) {
    const auto member = record.find(f.name);
    value = default_member(f.member);
    if (member) from_json_value(*member, value);
  } else {
    from_json_value(record[f.name], value);
  }
  if constexpr (std::equality_comparable<M>) {
    if (f.allowed.empty() ||
        std::find(f.allowed.begin(), f.allowed.end(), value) != f.allowed.end()) {
      return;
    }
    std::vector<std::string> names;
    for (const M& a : f.allowed) names.push_back(to_json_value(a).dump());
    record[f.name].fail(
        fmt::format("is {}, expected {}", to_json_value(value).dump(), fmt::join(names, " or ")));
  }
}

template <Described T>
struct JsonCodec<T> {
  static nlohmann::json write(const T& v) {
    nlohmann::json out = nlohmann::json::object();
    for_each_field<T>(
        [&](const auto& f) { out[std::string(f.name)] = to_json_value(v.*f.member); });
    return out;
  }
  static void read(const JsonReader& r, T& v) {
    r.require_object();
    for_each_field<T>([&](const auto& f) { read_field(r, f, v.*f.member); });
    if constexpr (requires { Fields<T>::validate(v, r); }) Fields<T>::validate(v, r);
  }
};

}  // namespace trainscope::results

#endif  // TRAINSCOPE_RESULTS_FIELDS_H_
