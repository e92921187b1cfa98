// Flag validators whose messages say what is wrong in words: CLI11's own
// print their whole range ("not in range 0.000000 to 1797..."); and the flag
// parsing of the stand-alone tools (bench/), with trainscope's exit codes.
#ifndef TRAINSCOPE_CLI_VALIDATORS_H_
#define TRAINSCOPE_CLI_VALIDATORS_H_

#include <cmath>
#include <optional>
#include <string>

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
