// A report table written once and rendered for either output (HTML or
// Markdown): a title, headers, rows, warnings about particular rows, and a
// note. Every per-case table of the report is one.
#ifndef TRAINSCOPE_REPORT_TABLE_H_
#define TRAINSCOPE_REPORT_TABLE_H_

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace trainscope::report {

struct Table {
  Table(std::string title_, std::vector<std::string> headers_,
        std::vector<std::vector<std::string>> rows_ = {}, std::string note_ = "",
        std::set<size_t> text_columns_ = {0})
      : title(std::move(title_)),
        headers(std::move(headers_)),
        rows(std::move(rows_)),
        note(std::move(note_)),
        text_columns(std::move(text_columns_)) {}
  std::string title;
  std::vector<std::string> headers;  // the first column holds names (left-aligned)
  std::vector<std::vector<std::string>> rows;
  std::string note;                     // a paragraph after the table
  std::set<size_t> text_columns = {0};  // left-aligned
  // Shown above the HTML table and below the Markdown one, each "Warning: ...".
  std::vector<std::string> warnings;
};

// Empty when the table has no rows.
std::string to_html(const Table& t);
std::string to_markdown(const Table& t);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_TABLE_H_
