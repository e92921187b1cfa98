// The end-to-end command helpers (tests/run_command.h), as the report tests
// name them.
#ifndef TRAINSCOPE_TESTS_REPORT_RUN_COMMAND_H_
#define TRAINSCOPE_TESTS_REPORT_RUN_COMMAND_H_

#include "tests/run_command.h"

namespace trainscope::report::testing {
using trainscope::testing::CommandResult;
using trainscope::testing::run_shell;
using trainscope::testing::run_trainscope;
using trainscope::testing::shell_quote;
using trainscope::testing::trainscope_binary;
}  // namespace trainscope::report::testing

#endif  // TRAINSCOPE_TESTS_REPORT_RUN_COMMAND_H_
