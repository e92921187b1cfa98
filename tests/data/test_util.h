// Helpers for the data tests: the scratch directory of tests/temp_dir.h,
// with its small file writers. Not thread-safe; one per test.
#ifndef TRAINSCOPE_TESTS_DATA_TEST_UTIL_H_
#define TRAINSCOPE_TESTS_DATA_TEST_UTIL_H_

#include "tests/temp_dir.h"

namespace trainscope::training::testing {

using ::trainscope::testing::TempDir;

}  // namespace trainscope::training::testing

#endif  // TRAINSCOPE_TESTS_DATA_TEST_UTIL_H_
