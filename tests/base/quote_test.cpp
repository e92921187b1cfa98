// base/quote.h: what input files hold, made safe for a terminal.
#include "base/quote.h"

#include <gtest/gtest.h>

#include <string>

namespace trainscope {
namespace {

TEST(QuoteTest, PrintableTextAndUtf8AreKept) {
  EXPECT_EQ(terminal_safe("node1 slots=4"), "node1 slots=4");
  EXPECT_EQ(terminal_safe("caf\xc3\xa9 \xe2\x82\xac"), "caf\xc3\xa9 \xe2\x82\xac");
  EXPECT_EQ(quoted_for_terminal("x"), "'x'");
}

TEST(QuoteTest, ControlsInvalidBytesAndReorderingCharactersAreEscaped) {
  EXPECT_EQ(terminal_safe("a\x1b[2J\x07\n\t\r\x7f"), "a\\x1b[2J\\x07\\n\\t\\r\\x7f");
  EXPECT_EQ(terminal_safe(std::string("\0z", 2)), "\\x00z");
  EXPECT_EQ(terminal_safe("\xff\xc3"), "\\xff\\xc3");  // not UTF-8
  EXPECT_EQ(terminal_safe("\xc2\x9b"
                          "31m"),
            "\\u009b31m");  // C1 CSI
  EXPECT_EQ(terminal_safe("abc\xe2\x80\xae"
                          "fdp"),
            "abc\\u202efdp");  // right-to-left override
}

TEST(QuoteTest, LongTextIsCutSayingHowMuch) {
  std::string cut(200, 'x');
  cut += "... (50 more bytes)";  // appended: GCC 12 warns falsely on string + literal here
  EXPECT_EQ(terminal_safe(std::string(250, 'x'), 200), cut);
  EXPECT_EQ(terminal_safe("\xe2\x82\xac\xe2\x82\xac", 4), "\xe2\x82\xac\xe2\x82\xac")
      << "a character is not split";
}

}  // namespace
}  // namespace trainscope
