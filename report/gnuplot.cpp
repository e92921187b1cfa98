#include "report/gnuplot.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "kernels/atomic_file.h"
#include "kernels/check.h"

namespace trainscope::report {

namespace fs = std::filesystem;

namespace {

bool is_executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

void write_text(const fs::path& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out) throw Error(fmt::format("cannot write {}", path.string()), kExitFailure);
}

// Removes the directory on every way out of render_svg.
struct TempDir {
  fs::path path;
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string templ = (fs::path(base && *base ? base : "/tmp") / "trainscope-chart-XXXXXX").string();
    if (!::mkdtemp(templ.data())) {
      throw Error(fmt::format("cannot create a temporary directory {}: {}", templ,
                              std::strerror(errno)),
                  kExitFailure);
    }
    path = templ;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

std::optional<std::string> find_gnuplot() {
  if (const char* env = std::getenv("TRAINSCOPE_GNUPLOT")) {
    if (is_executable(env)) return std::string(env);
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/bin:/bin";
  while (!dirs.empty()) {
    auto colon = dirs.find(':');
    std::string_view dir = dirs.substr(0, colon);
    if (!dir.empty()) {
      fs::path candidate = fs::path(dir) / "gnuplot";
      if (is_executable(candidate)) return candidate.string();
    }
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return std::nullopt;
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

std::string render_svg(const std::string& gnuplot, const ChartSpec& chart) {
  TempDir dir;
  for (const auto& d : chart.data) write_text(dir.path / d.name, d.content);
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
  write_text(dir.path / "chart.gp", script);

  const fs::path err_path = dir.path / "gnuplot.err";
  pid_t pid = ::fork();
  if (pid < 0) {
    throw Error(fmt::format("chart '{}': cannot start gnuplot: {}", chart.id, std::strerror(errno)),
                kExitFailure);
  }
  if (pid == 0) {
    if (::chdir(dir.path.c_str()) != 0) ::_exit(126);
    int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int null = ::open("/dev/null", O_RDWR);
    if (err >= 0) ::dup2(err, STDERR_FILENO);
    if (null >= 0) {
      ::dup2(null, STDIN_FILENO);
      ::dup2(null, STDOUT_FILENO);
    }
    ::execl(gnuplot.c_str(), gnuplot.c_str(), "chart.gp", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      throw Error(fmt::format("chart '{}': waiting for gnuplot: {}", chart.id,
                              std::strerror(errno)),
                  kExitFailure);
    }
  }
  const std::string messages = read_file(err_path);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw Error(fmt::format("chart '{}': gnuplot ({}) failed (status {}): {}", chart.id, gnuplot,
                            WIFEXITED(status) ? WEXITSTATUS(status) : -1, messages),
                kExitFailure);
  }
  std::string svg = read_file(dir.path / "chart.svg");
  const auto start = svg.find("<svg");
  const auto end = svg.rfind("</svg>");
  if (start == std::string::npos || end == std::string::npos) {
    throw Error(fmt::format("chart '{}': gnuplot wrote no SVG: {}", chart.id, messages),
                kExitFailure);
  }
  return svg.substr(start, end + 6 - start);
}

}  // namespace trainscope::report
