// Parsing a suite in tests: a suite text as "t.toml" beside the built-in
// suites, the error it makes the parser throw, its cases' names.
#ifndef TRAINSCOPE_TESTS_SUITES_SUITE_PARSE_H_
#define TRAINSCOPE_TESTS_SUITES_SUITE_PARSE_H_

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/check.h"
#include "suites/suite_config.h"

namespace trainscope::suites {

inline Suite parse_test_suite(const std::string& text) {
  return parse_suite(text, "t.toml", TRAINSCOPE_SOURCE_DIR "/suites");
}

// The message of the Error `text` makes the parser throw ("" if none).
inline std::string suite_error(const std::string& text) {
  try {
    parse_test_suite(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), kExitBadInput);
    return e.what();
  }
  return "";
}

inline std::vector<std::string> case_names(const Suite& s) {
  std::vector<std::string> out;
  for (const auto& c : s.cases) out.push_back(c.name);
  return out;
}

}  // namespace trainscope::suites

#endif  // TRAINSCOPE_TESTS_SUITES_SUITE_PARSE_H_
