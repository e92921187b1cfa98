// Whether text can go to a terminal as it is: valid UTF-8 with no control
// character but the newline (no C0 or C1 control: ESC, CSI and BEL move the
// cursor, clear the screen or ring), for the tests of error messages that
// quote what input files hold (issue 25 item 13).
#ifndef TRAINSCOPE_TESTS_TERMINAL_SAFE_H_
#define TRAINSCOPE_TESTS_TERMINAL_SAFE_H_

#include <string>
#include <string_view>

#include "base/utf8.h"

namespace trainscope::testing {

// "" when `text` is safe; else where and what the first unsafe byte is.
inline std::string terminal_unsafe(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const Utf8Char c = decode_utf8(text, i);
    const bool control = c.cp < 0x20 ? c.cp != '\n' : (c.cp >= 0x7f && c.cp < 0xa0);
    if (c.cp == kInvalidCodePoint || control) {
      return "byte " + std::to_string(i) + " is " +
             std::to_string(static_cast<unsigned char>(text[i])) + " in: " + std::string(text);
    }
    i += c.len;
  }
  return "";
}

}  // namespace trainscope::testing

#endif  // TRAINSCOPE_TESTS_TERMINAL_SAFE_H_
