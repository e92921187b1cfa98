// Reading JSON that comes from outside the process: files a user gives
// (model configs, baselines, data records, checkpoints' state, safetensors
// headers) and files another trainscope process wrote (run summaries, sweep
// rows). The one JSON reader of the project: every such value is parsed by
// parse_json / read_json_file and read through a JsonReader.
//
// A JsonReader is a JSON value plus the path that led to it. Its getters are
// strict: a missing member, a value of the wrong type or an integer or float
// that does not fit the requested C++ type throws trainscope::Error naming the
// value by its path, e.g.
//   field 'ranks[1].data.bytes_held' must be an integer, got string
//   missing required field 'ranks[1].data.bytes_held'
//   field 'hidden_size' is 4294967328, out of range for a 32-bit integer
// so a caller only has to prefix the file (and line): see JsonReader::rethrow_in.
// Unknown members are never an error: newer writers may add fields.
//
// Thread-safety: a JsonReader only reads the value it refers to, which must
// outlive it.
#ifndef TRAINSCOPE_BASE_JSON_READER_H_
#define TRAINSCOPE_BASE_JSON_READER_H_

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/check.h"

namespace trainscope {

// Parses `text`; Error "WHERE: not valid JSON: ..." when it is not.
nlohmann::json parse_json(std::string_view text, std::string_view where);
// The whole file, parsed; Error naming the file when it cannot be read or is
// not JSON.
nlohmann::json read_json_file(const std::filesystem::path& path);

class JsonReader {
 public:
  // `path` names `value` in messages; empty for a document's top level.
  explicit JsonReader(const nlohmann::json& value, std::string path = "");

  const nlohmann::json& value() const { return value_; }
  const std::string& path() const { return path_; }
  bool is_null() const { return value_.is_null(); }

  // Throws Error "field 'PATH' WHAT" ("the top level WHAT" at the top).
  [[noreturn]] void fail(std::string_view what) const;

  // A required member; Error "missing required field 'PATH.key'".
  JsonReader operator[](std::string_view key) const;
  // A member that may be absent or null.
  std::optional<JsonReader> find(std::string_view key) const;
  bool contains(std::string_view key) const;
  // Element i of an array (i < size()).
  JsonReader operator[](std::size_t i) const;
  // Elements of an array; Error when the value is not one.
  std::size_t size() const;
  void require_object() const;
  void require_array() const;

  // The value as T, checked: bool, int, int64_t, uint64_t, float and double
  // (finite, and in range of the type), std::string.
  template <typename T>
  T get() const;
  // get<T>() of member `key`, or `fallback` when the member is absent.
  template <typename T>
  T get_or(std::string_view key, T fallback) const {
    const auto member = find(key);
    return member ? member->get<T>() : fallback;
  }

  // Calls `read`; an Error from it is thrown again as "WHERE: message" with
  // the same exit code (WHERE: the file, or file:line).
  template <typename F>
  static auto rethrow_in(std::string_view where, F&& read) -> decltype(read());

 private:
  std::string child(std::string_view key) const;

  const nlohmann::json& value_;
  std::string path_;
};

template <>
bool JsonReader::get<bool>() const;
template <>
int JsonReader::get<int>() const;
template <>
int64_t JsonReader::get<int64_t>() const;
template <>
uint64_t JsonReader::get<uint64_t>() const;
template <>
float JsonReader::get<float>() const;
template <>
double JsonReader::get<double>() const;
template <>
std::string JsonReader::get<std::string>() const;

template <typename F>
auto JsonReader::rethrow_in(std::string_view where, F&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const Error& e) {
    throw Error(std::string(where) + ": " + e.what(), e.exit_code());
  }
}

}  // namespace trainscope

#endif  // TRAINSCOPE_BASE_JSON_READER_H_
