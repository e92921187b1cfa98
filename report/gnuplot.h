// Runs gnuplot to turn a chart (a script plus its data files) into SVG.
//
// Each chart runs in a fresh private temporary directory: the data files and
// the script are written there, gnuplot runs with that directory as its
// working directory and writes `chart.svg`, and the directory is removed
// afterwards whatever happens. Scripts therefore refer to their data files by
// bare name and must `set output 'chart.svg'`.
//
// The gnuplot program is found on PATH, or taken from the TRAINSCOPE_GNUPLOT
// environment variable when set (which also lets tests simulate a missing
// gnuplot), by find_program()'s rule. gnuplot runs in its own
// process group through profiler::run_to_completion(): one that outlives the
// timeout is killed with whatever it started.
//
// Thread-safety: safe to call from several threads (separate directories).
#ifndef TRAINSCOPE_REPORT_GNUPLOT_H_
#define TRAINSCOPE_REPORT_GNUPLOT_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/check.h"

namespace trainscope {
class SignalGuard;  // base/process.h
}  // namespace trainscope

namespace trainscope::report {

struct DataFile {
  std::string name;  // bare file name, e.g. "phases.dat"
  std::string content;
};

struct ChartSpec {
  std::string id;      // stable, for anchors and tests, e.g. "phases"
  std::string title;   // shown above the chart (HTML-escaped by the renderer)
  std::string script;  // gnuplot commands after the common preamble
  std::vector<DataFile> data;
  int width = 860;
  int height = 420;
};

// Path of the gnuplot program, or std::nullopt when none is found.
std::optional<std::string> find_gnuplot();

// A chart takes gnuplot well under a second; one minute means it hangs.
inline constexpr double kGnuplotTimeoutSeconds = 60;

// render_svg's Error when gnuplot did not finish within the timeout (it was
// killed): a gnuplot that hangs on one chart will hang on the next.
class GnuplotTimeout : public Error {
 public:
  using Error::Error;
};
// render_svg's Error when the guard's SIGINT or SIGTERM stopped gnuplot (or
// came before it started); its exit code is 128 + the signal.
class GnuplotInterrupted : public Error {
 public:
  using Error::Error;
};

// Renders the chart and returns the <svg> element (the XML prolog and
// DOCTYPE gnuplot writes are dropped so it can be inlined in HTML). Throws
// trainscope::Error (exit code 1) naming the chart id, with gnuplot's
// messages, when gnuplot cannot start or fails; GnuplotTimeout when it does
// not finish within `timeout_seconds`; GnuplotInterrupted when `signals`
// (may be null) records SIGINT or SIGTERM. gnuplot and its directory are
// gone when it returns or throws.
std::string render_svg(const std::string& gnuplot, const ChartSpec& chart,
                       double timeout_seconds = kGnuplotTimeoutSeconds,
                       const SignalGuard* signals = nullptr);

// A gnuplot single-quoted string literal for arbitrary text: quotes doubled,
// control characters replaced by spaces. Use with `set termoption
// noenhanced` (the preamble sets it) so that no character is markup.
std::string gnuplot_quote(std::string_view text);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_GNUPLOT_H_
