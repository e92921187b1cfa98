// Flag validators whose messages say what is wrong in words, one way for
// every number flag: "FLAG: must be WHAT, got VALUE". CLI11's own print
// their whole range ("Value 0 not in range 0.000000 to 1797...", 309 digits),
// say "Could not convert", or take -1 for an unsigned 18446744073709551615.
// A whole-number flag is checked by whole_number<T>() of its own type, a
// floating-point one by a number_that() check (kPositive...). Also the flag
// parsing of the stand-alone tools (bench/), with trainscope's exit codes.
#ifndef TRAINSCOPE_CLI_VALIDATORS_H_
#define TRAINSCOPE_CLI_VALIDATORS_H_

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "base/check.h"
#include "results/results_db.h"

namespace trainscope::cli {

// A finite number for which `ok` holds; else "must be WHAT, got VALUE".
template <typename Ok>
CLI::Validator number_that(const std::string& what, const std::string& name, Ok ok) {
  return CLI::Validator(
      [what, ok](std::string& v) {
        double x = 0;
        return CLI::detail::lexical_cast(v, x) && std::isfinite(x) && ok(x)
                   ? std::string()
                   : "must be " + what + ", got " + v;
      },
      name);
}

inline const CLI::Validator kPositive =
    number_that("a positive number", "POSITIVE", [](double x) { return x > 0; });
inline const CLI::Validator kNonNegative =
    number_that("a non-negative number", "NON-NEGATIVE", [](double x) { return x >= 0; });
// For values where 0 or a negative number means something (off, whole):
// only NaN and infinity are nonsense.
inline const CLI::Validator kFinite =
    number_that("a finite number", "NUMBER", [](double) { return true; });

namespace internal {

enum class Fit { kNotWhole, kBelow, kWithin, kAbove };

// Where `text` falls against [low, high] if it is a whole number; one beyond
// 64 bits falls beyond every T, on its side.
template <typename T>
Fit whole_number_fit(std::string_view text, T low, T high) {
  const bool negative = text.starts_with('-');
  const std::string_view digits = text.substr(negative ? 1 : 0);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return Fit::kNotWhole;
  }
  if (negative) {
    long long x = 0;
    const bool fits = std::from_chars(text.data(), text.data() + text.size(), x).ec == std::errc();
    if (!fits || std::cmp_less(x, low)) return Fit::kBelow;
    return std::cmp_greater(x, high) ? Fit::kAbove : Fit::kWithin;
  }
  unsigned long long x = 0;
  const bool fits =
      std::from_chars(digits.data(), digits.data() + digits.size(), x).ec == std::errc();
  if (!fits || std::cmp_greater(x, high)) return Fit::kAbove;
  return std::cmp_less(x, low) ? Fit::kBelow : Fit::kWithin;
}

}  // namespace internal

// A whole number of the flag's type T from `low` to `high` (T's own range by
// default): "must be a whole number" for text that is not one (abc, 1.5),
// else "must be at least 1", "at most 2147483647" or "from 1 to 4".
template <typename T>
CLI::Validator whole_number(T low = std::numeric_limits<T>::lowest(),
                            T high = std::numeric_limits<T>::max()) {
  static_assert(std::is_integral_v<T>);
  const bool floor = low == std::numeric_limits<T>::lowest();
  const bool ceiling = high == std::numeric_limits<T>::max();
  const std::string range = fmt::format("from {} to {}", low, high);
  const std::string below = ceiling ? fmt::format("at least {}", low) : range;
  const std::string above = floor ? fmt::format("at most {}", high) : range;
  const std::string shown = floor && ceiling ? ""
                            : ceiling        ? fmt::format(">={}", low)
                            : floor          ? fmt::format("<={}", high)
                                             : fmt::format("[{}, {}]", low, high);
  return CLI::Validator(
      [=](std::string& v) -> std::string {
        switch (internal::whole_number_fit(v, low, high)) {
          case internal::Fit::kNotWhole: return "must be a whole number, got " + v;
          case internal::Fit::kBelow: return fmt::format("must be {}, got {}", below, v);
          case internal::Fit::kAbove: return fmt::format("must be {}, got {}", above, v);
          case internal::Fit::kWithin: break;
        }
        return "";
      },
      shown);
}

// A size in bytes as nccl-tests' -b and -e read it: a whole number with an
// optional suffix K, M, G, T, P or E (any case, alone or with B, iB: powers
// of 1024), turned into the number for the flag's own check (whole_number).
inline const CLI::Validator kByteSize = CLI::Validator(
    [](std::string& v) -> std::string {
      const std::size_t unit_at = std::min(v.find_first_not_of("0123456789"), v.size());
      std::string unit = v.substr(unit_at);
      for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const std::size_t power = unit.empty() ? 0 : std::string_view("bkmgtpe").find(unit[0]);
      const std::string_view rest = std::string_view(unit).substr(unit.empty() ? 0 : 1);
      const bool known =
          power != std::string_view::npos &&
          (rest.empty() || (power > 0 && (rest == "b" || rest == "i" || rest == "ib")));
      if (unit_at == 0 || !known) {
        return "must be a whole number of bytes, or one with K, M, G... (powers of 1024), got " + v;
      }
      unsigned long long bytes = 0;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + unit_at, bytes);
      for (std::size_t i = 0; ec == std::errc() && i < power; ++i) {
        if (__builtin_mul_overflow(bytes, 1024ull, &bytes))
          return "must be less than 16 EiB, got " + v;
      }
      if (ec == std::errc()) v = std::to_string(bytes);  // else too long: the flag's check says so
      return "";
    },
    "SIZE");

// For the stand-alone tools (bench/), whose flags are not whole_number's yet.
inline CLI::Validator at_least(long long low) {
  return number_that(fmt::format("at least {}", low), fmt::format(">={}", low),
                     [low](double x) { return x >= static_cast<double>(low); });
}

inline CLI::Validator strictly_between(double low, double high) {
  return number_that(fmt::format("above {} and below {}", low, high),
                     fmt::format("({},{})", low, high),
                     [low, high](double x) { return x > low && x < high; });
}

// A results database path (--db): a regular file or nothing yet, never a
// device or FIFO (results::db_file_problem), refused before any work.
inline const CLI::Validator kDbFile =
    CLI::Validator([](std::string& path) { return results::db_file_problem(path); }, "DB");

// Parses a tool's flags. Returns the code to exit with now, after --help (0)
// or a bad flag (2, the message and the usage printed), as `trainscope` does:
// CLI11_PARSE would exit with CLI11's own codes (105 for a bad value).
inline std::optional<int> parse_flags(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  }
}

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_VALIDATORS_H_
