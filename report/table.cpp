#include "report/table.h"

#include <fmt/format.h>

#include "base/format.h"

namespace trainscope::report {

std::string to_html(const Table& t) {
  if (t.rows.empty()) return "";
  std::string out = fmt::format("<h4>{}</h4>\n", html_escape(t.title));
  for (const auto& w : t.warnings) out += "<p class=\"note\">Warning: " + html_escape(w) + "</p>\n";
  out += "<table class=\"answers\"><tr>";
  for (size_t i = 0; i < t.headers.size(); ++i) {
    out += fmt::format("<th{}>{}</th>", t.text_columns.contains(i) ? " class=\"name\"" : "",
                       html_escape(t.headers[i]));
  }
  out += "</tr>\n";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (size_t i = 0; i < row.size(); ++i) {
      out += fmt::format("<td{}>{}</td>", t.text_columns.contains(i) ? " class=\"name\"" : "",
                         html_escape(row[i]));
    }
    out += "</tr>\n";
  }
  out += "</table>\n";
  if (!t.note.empty()) out += "<p class=\"meta\">" + html_escape(t.note) + "</p>\n";
  return out;
}

std::string to_markdown(const Table& t) {
  if (t.rows.empty()) return "";
  std::string out = fmt::format("**{}**\n\n|", markdown_cell(t.title));
  std::string rule = "|";
  for (size_t i = 0; i < t.headers.size(); ++i) {
    out += fmt::format(" {} |", markdown_cell(t.headers[i]));
    rule += t.text_columns.contains(i) ? ":--|" : "--:|";
  }
  out += fmt::format("\n{}\n", rule);
  for (const auto& row : t.rows) {
    out += "|";
    for (const auto& cell : row) out += fmt::format(" {} |", markdown_cell(cell));
    out += "\n";
  }
  out += "\n";
  for (const auto& w : t.warnings) out += "**Warning**: " + markdown_cell(w) + "\n\n";
  if (!t.note.empty()) out += markdown_cell(t.note) + "\n\n";
  return out;
}

}  // namespace trainscope::report
