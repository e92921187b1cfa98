// What an input file holds, made safe to print: error messages quote a
// hostfile's words, a JSON file's keys and bytes, a safetensors header's
// tensor names, and a file of random bytes (or one written to attack the
// reader) must not reach the terminal raw: ESC and CSI sequences clear the
// screen, retitle the window or hide the rest of the message. The one helper
// every such message goes through.
//
// Kept as they are: printable ASCII and valid UTF-8 characters. Escaped:
// C0 controls and DEL as \n, \t, \r or \xNN; C1 controls (U+0080-U+009F),
// the line and paragraph separators and the bidirectional controls that can
// reorder what the reader sees as \uNNNN; bytes that are not valid UTF-8 as
// \xNN. Long text is cut, saying how many bytes were left out.
//
// Thread-safety: pure functions.
#ifndef TRAINSCOPE_BASE_QUOTE_H_
#define TRAINSCOPE_BASE_QUOTE_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace trainscope {

// Past this many bytes of input, the rest is summarised ("... (N more
// bytes)"): a binary file's first "word" can be megabytes long.
inline constexpr std::size_t kMaxQuotedBytes = 200;

// `text` escaped as above, without quotes around it.
std::string terminal_safe(std::string_view text, std::size_t max_bytes = kMaxQuotedBytes);

// The same in single quotes: 'text'.
std::string quoted_for_terminal(std::string_view text, std::size_t max_bytes = kMaxQuotedBytes);

}  // namespace trainscope

#endif  // TRAINSCOPE_BASE_QUOTE_H_
