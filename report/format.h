// How report text is written: escaping for HTML and Markdown, and numbers
// and byte counts as every table of the report and the check shows them.
//
// Thread-safety: pure functions.
#ifndef TRAINSCOPE_REPORT_FORMAT_H_
#define TRAINSCOPE_REPORT_FORMAT_H_

#include <string>
#include <string_view>

#include "kernels/storage.h"

namespace trainscope::report {

std::string html_escape(std::string_view text);
// Escapes a Markdown table cell: '|', backslash, emphasis and link
// characters, '<' '>' '&' as entities; newlines become spaces.
std::string markdown_cell(std::string_view text);

// Display helpers shared with the check tables: "-" for NaN.
std::string format_number(double v, int precision);
using kernels::format_bytes;

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_FORMAT_H_
