#include "base/quote.h"

#include <fmt/format.h>

// The project's one UTF-8 decoder (header-only; no link dependency on the
// tokenizers).
#include "base/utf8.h"

namespace trainscope {
namespace {

// Characters that are valid but act on the terminal or on how the line reads.
bool is_invisible_control(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x200e && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

void append_control(unsigned char byte, std::string* out) {
  switch (byte) {
    case '\n': *out += "\\n"; break;
    case '\t': *out += "\\t"; break;
    case '\r': *out += "\\r"; break;
    default: *out += fmt::format("\\x{:02x}", byte);
  }
}

}  // namespace

std::string terminal_safe(std::string_view text, std::size_t max_bytes) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size() && i < max_bytes) {
    const Utf8Char c = decode_utf8(text, i);
    const auto byte = static_cast<unsigned char>(text[i]);
    if (c.cp == kInvalidCodePoint) {
      out += fmt::format("\\x{:02x}", byte);
    } else if (c.cp < 0x20 || c.cp == 0x7f) {
      append_control(byte, &out);
    } else if (is_invisible_control(c.cp)) {
      out += fmt::format("\\u{:04x}", c.cp);
    } else {
      out.append(text.substr(i, c.len));
    }
    i += c.len;
  }
  if (i < text.size()) out += fmt::format("... ({} more bytes)", text.size() - i);
  return out;
}

std::string quoted_for_terminal(std::string_view text, std::size_t max_bytes) {
  // Appended, not "'" + ... + "'": GCC 12 warns falsely (-Wrestrict) on that.
  std::string out(1, '\'');
  out += terminal_safe(text, max_bytes);
  out += '\'';
  return out;
}

}  // namespace trainscope
