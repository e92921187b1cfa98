#include "report/gnuplot.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/check.h"
#include "profiler/supervise.h"

namespace trainscope::report {

namespace fs = std::filesystem;

namespace {

void write_text(const fs::path& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out) throw Error(fmt::format("cannot write {}", path.string()), kExitFailure);
}

}  // namespace

std::optional<std::string> find_gnuplot() {
  const char* chosen = std::getenv("TRAINSCOPE_GNUPLOT");
  try {
    return find_program(chosen != nullptr ? chosen : "gnuplot");
  } catch (const Error&) {
    return std::nullopt;  // not found or not executable: tables only
  }
}

std::string gnuplot_quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "''";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += ' ';
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string render_svg(const std::string& gnuplot, const ChartSpec& chart, double timeout_seconds,
                       const SignalGuard* signals) {
  ScopedTempDir dir("trainscope-chart");
  for (const auto& d : chart.data) write_text(dir.path() / d.name, d.content);
  std::string script = fmt::format(
      "set terminal svg size {},{} font 'sans,11' background rgb 'white'\n"
      "set termoption noenhanced\n"
      "set output 'chart.svg'\n"
      "set encoding utf8\n"
      "set grid ytics lc rgb '#dddddd'\n"
      "set key outside right top\n"
      "set datafile missing 'NaN'\n",
      chart.width, chart.height);
  script += chart.script;
  write_text(dir.path() / "chart.gp", script);

  SpawnOptions options;
  options.argv = {gnuplot, "chart.gp"};
  options.working_dir = dir.path();
  options.own_process_group = true;  // whatever gnuplot starts dies with it
  profiler::CompletedRun run;
  try {
    run = profiler::run_to_completion(options, timeout_seconds, signals);
  } catch (const Error& e) {
    throw Error(fmt::format("chart '{}': cannot run gnuplot: {}", chart.id, e.what()),
                kExitFailure);
  }
  if (run.interrupted) {
    const int sig = signals->interrupt_signal();
    throw GnuplotInterrupted(fmt::format("chart '{}': interrupted by SIG{} (gnuplot stopped)",
                                         chart.id, sigabbrev_np(sig)),
                             128 + sig);
  }
  if (run.timed_out) {
    throw GnuplotTimeout(fmt::format("chart '{}': gnuplot ({}) did not finish within {:g} s "
                                     "(killed)",
                                     chart.id, gnuplot, timeout_seconds),
                         kExitFailure);
  }
  const std::string& messages = run.err;
  if (run.exit_code != 0) {
    throw Error(fmt::format("chart '{}': gnuplot ({}) failed (exit code {}): {}", chart.id, gnuplot,
                            run.exit_code, messages),
                kExitFailure);
  }
  std::string svg = read_file(dir.path() / "chart.svg");
  const auto start = svg.find("<svg");
  const auto end = svg.rfind("</svg>");
  if (start == std::string::npos || end == std::string::npos) {
    throw Error(fmt::format("chart '{}': gnuplot wrote no SVG: {}", chart.id, messages),
                kExitFailure);
  }
  return svg.substr(start, end + 6 - start);
}

}  // namespace trainscope::report
