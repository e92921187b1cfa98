// Helpers shared by the tokenizer tests: where the GPT-2 files are, and
// checking that an Error names its culprit (TempDir: tests/data/test_util.h).
#ifndef TRAINSCOPE_TESTS_TOKENIZERS_TEST_UTIL_H_
#define TRAINSCOPE_TESTS_TOKENIZERS_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "base/check.h"
#include "tests/data/test_util.h"  // TempDir

namespace trainscope::training::testing {

inline const std::string kGpt2Dir = TRAINSCOPE_SOURCE_DIR "/../shared/data/gpt2";
inline const std::string kGoldenPath =
    TRAINSCOPE_SOURCE_DIR "/tests/tokenizers/testdata/gpt2_golden.jsonl";

inline bool have_gpt2_files() {
  return std::filesystem::exists(kGpt2Dir + "/encoder.json") &&
         std::filesystem::exists(kGpt2Dir + "/vocab.bpe");
}

#define TS_REQUIRE_GPT2_FILES()                                                                 \
  if (!::trainscope::training::testing::have_gpt2_files())                                      \
  GTEST_SKIP() << "GPT-2 vocabulary not found in " << ::trainscope::training::testing::kGpt2Dir \
               << " (encoder.json, vocab.bpe); skipping"

// Runs `f`, which must throw trainscope::Error whose message contains every
// one of `parts`.
inline void expect_error_naming(const std::function<void()>& f,
                                std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected trainscope::Error, nothing was thrown";
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos)
          << "error message \"" << message << "\" does not mention \"" << part << "\"";
    }
    EXPECT_EQ(e.exit_code(), kExitBadInput) << message;
  }
}

}  // namespace trainscope::training::testing

#endif  // TRAINSCOPE_TESTS_TOKENIZERS_TEST_UTIL_H_
