// The fixture of the regression-check tests (check_test.cpp, the library;
// check_cli_test.cpp, `trainscope check` end to end): a scratch directory,
// synthetic suites written into databases there, and the check between two.
#ifndef TRAINSCOPE_TESTS_CHECK_CHECK_FIXTURE_H_
#define TRAINSCOPE_TESTS_CHECK_CHECK_FIXTURE_H_

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "check/regression_check.h"
#include "tests/run_command.h"
#include "tests/suite_builder.h"
#include "tests/temp_dir.h"

namespace trainscope::check {

namespace fs = std::filesystem;
using testing::build_suite_db;
using testing::reductions_suite;
using testing::run_trainscope;
using testing::shell_quote;
using testing::SuiteSpec;

class CheckTest : public ::testing::Test {
 protected:
  std::string db(const std::string& name, const SuiteSpec& spec) {
    const auto path = dir_ / name;
    build_suite_db(path, spec);
    return path.string();
  }
  static SuiteSpec honest(unsigned seed) {
    auto s = reductions_suite();
    s.seed = seed;
    return s;
  }
  static CheckResult check(const fs::path& baseline, const fs::path& current,
                           CheckOptions options = {}) {
    auto b = load_check_suite(baseline, "latest");
    auto c = load_check_suite(current, "latest");
    return run_check(&b, c, options);
  }
  static const CheckRow* find_row(const CheckResult& r, const std::string& case_name,
                                  const std::string& metric) {
    for (const auto& row : r.rows) {
      if (row.case_name == case_name && row.metric == metric) return &row;
    }
    return nullptr;
  }
  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string q(const fs::path& p) { return shell_quote(p.string()); }

  trainscope::testing::TempDir scratch_{"check-test"};
  const fs::path dir_ = scratch_.path();
};

}  // namespace trainscope::check

#endif  // TRAINSCOPE_TESTS_CHECK_CHECK_FIXTURE_H_
