// How text for people is written: escaping for HTML and Markdown, and
// numbers as every table of the report and the check shows them (byte
// counts: kernels::format_bytes).
//
// Thread-safety: pure functions.
#ifndef TRAINSCOPE_BASE_FORMAT_H_
#define TRAINSCOPE_BASE_FORMAT_H_

#include <string>
#include <string_view>

namespace trainscope {

std::string html_escape(std::string_view text);
// Escapes a Markdown table cell: '|', backslash, emphasis and link
// characters, '<' '>' '&' as entities; newlines become spaces.
std::string markdown_cell(std::string_view text);

// Display helpers shared with the check tables: "-" for NaN.
std::string format_number(double v, int precision);

}  // namespace trainscope

#endif  // TRAINSCOPE_BASE_FORMAT_H_
