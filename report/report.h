// Renders suites read from the results database as one self-contained HTML
// page (inline CSS, charts as inline SVG made by gnuplot, no scripts and no
// network) or as a Markdown summary for CI logs and pull requests.
//
// Every text that comes from the database (suite and case names, errors,
// commands, hosts) is escaped for its output: HTML entities in HTML, and
// Markdown-significant characters (and HTML ones, since Markdown renderers
// pass raw HTML through) in Markdown table cells.
//
// Without gnuplot the HTML report still has every table and says, at the
// top, why it has no charts. A chart gnuplot fails on is replaced by a
// visible error naming the chart; the rest of the report is kept. Once one
// chart has timed out the remaining charts are left out, and the report says
// so: a gnuplot that hangs on one chart hangs on each.
//
// Thread-safety: pure functions (render_html runs gnuplot subprocesses).
#ifndef TRAINSCOPE_REPORT_REPORT_H_
#define TRAINSCOPE_REPORT_REPORT_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/storage.h"
#include "base/format.h"
#include "report/gnuplot.h"
#include "analysis/suite_data.h"

namespace trainscope::report {

struct HtmlReport {
  std::string html;
  int charts = 0;                  // charts drawn
  std::vector<std::string> notes;  // no gnuplot, charts that failed (also in the page)
};

// How the HTML report draws its charts.
struct ChartOptions {
  std::optional<std::string> gnuplot;               // find_gnuplot(); std::nullopt: tables only
  double timeout_seconds = kGnuplotTimeoutSeconds;  // per chart
  // SIGINT/SIGTERM recorded by this guard stop the running gnuplot and the
  // report (GnuplotInterrupted); null: signals act as they would anyway.
  const SignalGuard* signals = nullptr;
};

HtmlReport render_html(const std::vector<analysis::SuiteData>& suites, const ChartOptions& charts);
// `gnuplot`: program path from find_gnuplot(), or std::nullopt for tables only.
inline HtmlReport render_html(const std::vector<analysis::SuiteData>& suites,
                              const std::optional<std::string>& gnuplot) {
  return render_html(suites, ChartOptions{.gnuplot = gnuplot});
}

std::string render_markdown(const std::vector<analysis::SuiteData>& suites);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_REPORT_H_
