#include "base/enum_names.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/check.h"

namespace trainscope {

std::string choices_text(std::span<const std::string_view> names) {
  return fmt::format("{}", fmt::join(names, ", "));
}

void throw_unknown_name(std::string_view where, std::string_view noun, std::string_view name,
                        std::span<const std::string_view> names) {
  throw Error(
      fmt::format("{}: unknown {} '{}' (expected {})", where, noun, name, choices_text(names)));
}

}  // namespace trainscope
