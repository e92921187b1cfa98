#include "base/json_reader.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/quote.h"

namespace trainscope {

using nlohmann::json;

json parse_json(std::string_view text, std::string_view where) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    // parse_error, or out_of_range for a number beyond a double ("1e400").
    throw Error(fmt::format("{}: not valid JSON: {}", where, terminal_safe(e.what())));
  }
}

json read_json_file(const std::filesystem::path& path) {
  return parse_json(read_file(path), path.string());
}

JsonReader::JsonReader(const json& value, std::string path)
    : value_(value), path_(std::move(path)) {}

void JsonReader::fail(std::string_view what) const {
  if (path_.empty()) throw Error(fmt::format("the top level {}", what));
  throw Error(fmt::format("field {} {}", quoted_for_terminal(path_), what));
}

std::string JsonReader::child(std::string_view key) const {
  return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
}

void JsonReader::require_object() const {
  if (!value_.is_object()) fail(fmt::format("must be an object, got {}", value_.type_name()));
}

void JsonReader::require_array() const {
  if (!value_.is_array()) fail(fmt::format("must be an array, got {}", value_.type_name()));
}

JsonReader JsonReader::operator[](std::string_view key) const {
  require_object();
  const auto it = value_.find(key);
  if (it == value_.end()) {
    throw Error(fmt::format("missing required field {}", quoted_for_terminal(child(key))));
  }
  return JsonReader(*it, child(key));
}

std::optional<JsonReader> JsonReader::find(std::string_view key) const {
  require_object();
  const auto it = value_.find(key);
  if (it == value_.end() || it->is_null()) return std::nullopt;
  return JsonReader(*it, child(key));
}

bool JsonReader::contains(std::string_view key) const {
  return value_.is_object() && value_.contains(key);
}

JsonReader JsonReader::operator[](std::size_t i) const {
  return JsonReader(value_[i], fmt::format("{}[{}]", path_, i));
}

std::size_t JsonReader::size() const {
  require_array();
  return value_.size();
}

template <>
bool JsonReader::get<bool>() const {
  if (!value_.is_boolean()) fail(fmt::format("must be true or false, got {}", value_.type_name()));
  return value_.get<bool>();
}

template <>
int64_t JsonReader::get<int64_t>() const {
  if (value_.is_number_unsigned()) {
    const auto u = value_.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail(fmt::format("is {}, out of range for a 64-bit integer", u));
    }
    return static_cast<int64_t>(u);
  }
  if (!value_.is_number_integer()) {
    fail(fmt::format("must be an integer, got {}", value_.type_name()));
  }
  return value_.get<int64_t>();
}

template <>
uint64_t JsonReader::get<uint64_t>() const {
  if (value_.is_number_unsigned()) return value_.get<uint64_t>();
  const int64_t v = get<int64_t>();
  if (v < 0) fail(fmt::format("is {}, must not be negative", v));
  return static_cast<uint64_t>(v);
}

template <>
int JsonReader::get<int>() const {
  const int64_t v = get<int64_t>();
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
    fail(fmt::format("is {}, out of range for a 32-bit integer", v));
  }
  return static_cast<int>(v);
}

template <>
double JsonReader::get<double>() const {
  if (!value_.is_number()) fail(fmt::format("must be a number, got {}", value_.type_name()));
  const double v = value_.get<double>();
  if (!std::isfinite(v)) fail("must be a finite number");
  return v;
}

template <>
float JsonReader::get<float>() const {
  const double v = get<double>();
  if (std::fabs(v) > std::numeric_limits<float>::max()) {
    fail(fmt::format("is {}, out of range for a 32-bit float", v));
  }
  return static_cast<float>(v);
}

template <>
std::string JsonReader::get<std::string>() const {
  if (!value_.is_string()) fail(fmt::format("must be a string, got {}", value_.type_name()));
  return value_.get<std::string>();
}

}  // namespace trainscope
