// An enumeration's names, declared once beside it and everything else
// derived: its name, parsing a name back (for flags, suite keys, records),
// the list of choices a help text or an error shows. Specialized once per
// enum, right after it:
//
//   enum class Precision { kFp32, kBf16 };
//   template <>
//   struct EnumNames<options::Precision> {
//     static constexpr std::array<std::string_view, 2> names = {"fp32", "bf16"};
//     static constexpr std::string_view noun = "precision";  // optional
//   };
//
// `names` lists the values 0..N-1 in order. `noun` words a bad name
// ("--precision: unknown precision 'fp16' (expected fp32, bf16)"; "value"
// without it). results/fields.h stores a named enum by its name in JSON and
// SQL (`sql_check`: CHECK (col IN (...names)) on its columns).
//
// Thread-safety: compile-time tables and pure functions.
#ifndef TRAINSCOPE_BASE_ENUM_NAMES_H_
#define TRAINSCOPE_BASE_ENUM_NAMES_H_

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace trainscope {

template <typename E>
struct EnumNames;

template <typename E>
concept NamedEnum = requires {
  EnumNames<E>::names;
};

template <NamedEnum E>
constexpr std::size_t enum_count() {
  return EnumNames<E>::names.size();
}

template <NamedEnum E>
constexpr std::string_view enum_name(E value) {
  return EnumNames<E>::names[static_cast<std::size_t>(value)];
}

template <NamedEnum E>
constexpr std::span<const std::string_view> enum_names() {
  return EnumNames<E>::names;
}

// The value called `name`; nullopt for anything else.
template <NamedEnum E>
std::optional<E> parse_enum(std::string_view name) {
  for (std::size_t i = 0; i < enum_count<E>(); ++i) {
    if (EnumNames<E>::names[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

// "a, b, c": the choices as an error or a help text lists them.
std::string choices_text(std::span<const std::string_view> names);
// An Error for a bad name: "WHERE: unknown NOUN 'NAME' (expected a, b, c)".
[[noreturn]] void throw_unknown_name(std::string_view where, std::string_view noun,
                                     std::string_view name,
                                     std::span<const std::string_view> names);

// The value called `name`, or the Error above naming `where` (a flag, a
// suite key, a record's field).
template <NamedEnum E>
E parse_choice(std::string_view name, std::string_view where) {
  if (const std::optional<E> e = parse_enum<E>(name)) return *e;
  if constexpr (requires { EnumNames<E>::noun; }) {
    throw_unknown_name(where, EnumNames<E>::noun, name, EnumNames<E>::names);
  } else {
    throw_unknown_name(where, "value", name, EnumNames<E>::names);
  }
}

}  // namespace trainscope

#endif  // TRAINSCOPE_BASE_ENUM_NAMES_H_
