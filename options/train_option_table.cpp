#include "options/train_option_table.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <type_traits>

#include "base/check.h"

namespace trainscope::options {
namespace {

using nlohmann::json;

// "lora.rank" -> ("lora", "rank"); "model" -> ("", "model").
std::pair<std::string, std::string> split_path(std::string_view path) {
  const std::size_t dot = path.find('.');
  if (dot == std::string_view::npos) return {"", std::string(path)};
  return {std::string(path.substr(0, dot)), std::string(path.substr(dot + 1))};
}

const json* find_path(const json& record, std::string_view path) {
  const auto [parent, leaf] = split_path(path);
  const json* holder = &record;
  if (!parent.empty()) {
    auto it = record.find(parent);
    if (it == record.end() || !it->is_object()) return nullptr;
    holder = &*it;
  }
  auto it = holder->find(leaf);
  return it == holder->end() ? nullptr : &*it;
}

template <typename T>
void set_integer(T& field, const TrainOption& row, const json& v, std::string_view where) {
  if (!v.is_number_integer()) throw Error(fmt::format("'{}' must be an integer", where));
  const int64_t x = v.get<int64_t>();
  const double low = row.min.value_or(std::numeric_limits<int64_t>::min());
  const double high = row.max.value_or(std::numeric_limits<int>::max());
  if (static_cast<double>(x) < low) {
    throw Error(fmt::format("'{}' must be at least {}, got {}", where, low, x));
  }
  if (static_cast<double>(x) > high) {
    throw Error(fmt::format("'{}' must be at most {}, got {}", where, high, x));
  }
  field = static_cast<T>(x);
}

void set_double(double& field, const TrainOption& row, const json& v, std::string_view where) {
  if (!v.is_number()) throw Error(fmt::format("'{}' must be a number", where));
  const double x = v.get<double>();
  if (!std::isfinite(x)) throw Error(fmt::format("'{}' must be a finite number, got {}", where, x));
  if (row.bad) {
    if (const std::string why = row.bad(x); !why.empty()) {
      throw Error(fmt::format("'{}' {}, got {}", where, why, x));
    }
  }
  if (row.min && x < *row.min)
    throw Error(fmt::format("'{}' must be at least {}, got {}", where, *row.min, x));
  if (row.max && x > *row.max)
    throw Error(fmt::format("'{}' must be at most {}, got {}", where, *row.max, x));
  field = x;
}

}  // namespace

const std::vector<TrainOption>& train_option_table() {
  static const std::vector<TrainOption> table = train_option_rows();
  return table;
}

const TrainOption* find_suite_option(std::string_view key) {
  for (const TrainOption& row : train_option_table()) {
    if (!row.suite.empty() && row.suite == key) return &row;
  }
  return nullptr;
}

const TrainOption* find_summary_option(std::string_view path) {
  for (const TrainOption& row : train_option_table()) {
    if (!row.summary.empty() && row.summary == path) return &row;
  }
  return nullptr;
}

json option_json(const TrainOption& row, const TrainOptions& o) {
  TrainOptions& m = const_cast<TrainOptions&>(o);  // the refs only read here
  return std::visit(
      [&](const auto& ref) -> json {
        using R = std::decay_t<decltype(ref)>;
        if constexpr (std::is_same_v<R, TextRef>) {
          return ref.get_json ? ref.get_json(o) : json(ref.get(o));
        } else {
          return json(ref(m));
        }
      },
      row.ref);
}

void set_option_json(const TrainOption& row, TrainOptions& o, const json& v,
                     std::string_view where) {
  std::visit(
      [&](const auto& ref) {
        using R = std::decay_t<decltype(ref)>;
        if constexpr (std::is_same_v<R, TextRef>) {
          if (v.is_string()) {
            ref.set(o, v.get<std::string>(), where);
          } else if (ref.set_json) {
            ref.set_json(o, v);
          } else {
            throw Error(fmt::format("'{}' must be a string", where));
          }
        } else if constexpr (std::is_same_v<R, Ref<std::string>>) {
          if (!v.is_string()) throw Error(fmt::format("'{}' must be a string", where));
          ref(o) = v.get<std::string>();
        } else if constexpr (std::is_same_v<R, Ref<bool>>) {
          if (!v.is_boolean()) throw Error(fmt::format("'{}' must be true or false", where));
          ref(o) = v.get<bool>();
        } else if constexpr (std::is_same_v<R, Ref<double>>) {
          set_double(ref(o), row, v, where);
        } else {
          set_integer(ref(o), row, v, where);
        }
      },
      row.ref);
}

std::string option_text(const TrainOption& row, const TrainOptions& o) {
  TrainOptions& m = const_cast<TrainOptions&>(o);  // the refs only read here
  return std::visit(
      [&](const auto& ref) -> std::string {
        using R = std::decay_t<decltype(ref)>;
        if constexpr (std::is_same_v<R, TextRef>) {
          return ref.get(o);
        } else if constexpr (std::is_same_v<R, Ref<std::string>>) {
          return ref(m);
        } else if constexpr (std::is_same_v<R, Ref<bool>>) {
          return ref(m) ? "true" : "false";
        } else {
          return fmt::format("{}", ref(m));
        }
      },
      row.ref);
}

bool option_is_default(const TrainOption& row, const TrainOptions& o) {
  static const TrainOptions defaults;
  return option_json(row, o) == option_json(row, defaults);
}

void reset_option(const TrainOption& row, TrainOptions& o) {
  static const TrainOptions defaults;
  const json v = option_json(row, defaults);
  if (v.is_null()) {
    std::get<TextRef>(row.ref).set_json(o, v);
  } else {
    set_option_json(row, o, v, row.summary);
  }
}

// Declared with TrainOptions, defined here: the record is the table's.
json TrainOptions::to_json() const { return options_record(*this); }

json options_record(const TrainOptions& o) {
  json out = json::object();
  for (const TrainOption& row : train_option_table()) {
    if (row.summary.empty()) continue;
    const auto [parent, leaf] = split_path(row.summary);
    if (parent.empty()) {
      out[leaf] = option_json(row, o);
    } else if (!row.applies_to(o)) {
      out[parent] = nullptr;  // the group means nothing here (LoRA's under full)
    } else {
      out[parent][leaf] = option_json(row, o);
    }
  }
  return out;
}

namespace {
// Rows whose `path_of` is found in `record` take its value; a value of the
// wrong type leaves the default.
template <typename PathOf>
TrainOptions options_from(const json& record, PathOf path_of) {
  TrainOptions o;
  if (!record.is_object()) return o;
  for (const TrainOption& row : train_option_table()) {
    const std::string_view path = path_of(row);
    if (path.empty()) continue;
    const json* v = find_path(record, path);
    if (v == nullptr) continue;
    try {
      if (v->is_null()) {
        if (std::holds_alternative<TextRef>(row.ref) && std::get<TextRef>(row.ref).set_json) {
          std::get<TextRef>(row.ref).set_json(o, *v);
        }
        continue;
      }
      set_option_json(row, o, *v, path);
    } catch (const Error&) {
      // Written by an older version in another form: the default stands.
    }
  }
  return o;
}
}  // namespace

TrainOptions options_from_record(const json& record) {
  return options_from(record, [](const TrainOption& row) { return row.summary; });
}

TrainOptions options_from_config(const json& config) {
  return options_from(config, [](const TrainOption& row) { return row.config_path(); });
}

std::string pytorch_unsupported(const TrainOptions& o) {
  for (const TrainOption& row : train_option_table()) {
    std::string why;
    if (row.pytorch != nullptr) {
      why = row.pytorch(o);  // a value the peer lacks, default or not
    } else if (!option_is_default(row, o)) {
      why = "the PyTorch peer has no counterpart for it";
    }
    if (why.empty()) continue;
    const std::string_view key = !row.suite.empty()  ? row.suite
                                 : !row.flag.empty() ? row.flag
                                                     : row.summary;
    return fmt::format("{} = {}: {}", key, option_text(row, o), why);
  }
  return "";
}

}  // namespace trainscope::options
