// EXPECT_TRUE(THROWS_BAD_INPUT(statement, needle)): the statement throws trainscope::Error
// whose message contains `needle`, with the bad-input exit code (2).
#ifndef TRAINSCOPE_TESTS_EXPECT_ERROR_H_
#define TRAINSCOPE_TESTS_EXPECT_ERROR_H_

#include <gtest/gtest.h>

#include <string>

#include "base/check.h"

#define THROWS_BAD_INPUT(statement, needle)                                                     \
  [&]() -> ::testing::AssertionResult {                                                         \
    try {                                                                                       \
      statement;                                                                                \
    } catch (const ::trainscope::Error& e) {                                                    \
      const std::string what = e.what();                                                        \
      if (what.find(needle) == std::string::npos) {                                             \
        return ::testing::AssertionFailure() << "message lacks '" << (needle) << "': " << what; \
      }                                                                                         \
      if (e.exit_code() != ::trainscope::kExitBadInput) {                                       \
        return ::testing::AssertionFailure() << "exit code " << e.exit_code() << ": " << what;  \
      }                                                                                         \
      return ::testing::AssertionSuccess();                                                     \
    }                                                                                           \
    return ::testing::AssertionFailure() << #statement " threw nothing";                        \
  }()

namespace trainscope::testing {

// The message of the trainscope::Error thrown by f (fails the test if none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a trainscope::Error";
  return "";
}

}  // namespace trainscope::testing

#endif  // TRAINSCOPE_TESTS_EXPECT_ERROR_H_
