#include "profiler/mpi_leftovers.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "profiler/proc_fs.h"

namespace trainscope::profiler {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kShm = "/dev/shm/";
// Open MPI 4's vader BTL and Open MPI 5's sm BTL.
constexpr std::string_view kSegmentPrefixes[] = {"vader_segment.", "sm_segment."};

// The pid in "pid.N" (ORTE) or "dvm.N" (PRRTE); 0 for any other name.
pid_t session_owner(const std::string& name) {
  for (std::string_view prefix : {"pid.", "dvm."}) {
    pid_t pid = 0;
    if (name.starts_with(prefix) && parse_pid(std::string_view(name).substr(prefix.size()), &pid)) {
      return pid;
    }
  }
  return 0;
}

template <typename F>
void for_each_line(std::string_view text, F&& f) {
  while (!text.empty()) {
    const std::size_t eol = std::min(text.find('\n'), text.size());
    f(text.substr(0, eol));
    text.remove_prefix(std::min(eol + 1, text.size()));
  }
}

}  // namespace

fs::path segment_in_maps_line(std::string_view line) {
  const std::size_t at = line.find(kShm);
  if (at == std::string_view::npos) return {};
  const std::string_view name = line.substr(at + kShm.size());
  // Already unlinked: nothing is left to remove.
  if (name.ends_with(" (deleted)") || name.find('/') != std::string_view::npos) return {};
  for (std::string_view prefix : kSegmentPrefixes) {
    if (name.starts_with(prefix) && name.size() > prefix.size()) return fs::path(kShm) / name;
  }
  return {};
}

fs::path session_dir_in_environ(std::string_view environ, std::span<const pid_t> pids) {
  std::string value;
  if (!find_environ_value(environ, "PMIX_SERVER_TMPDIR", &value) &&
      !find_environ_value(environ, "OMPI_MCA_orte_jobfam_session_dir", &value)) {
    return {};
  }
  fs::path dir = fs::path(value).lexically_normal();
  if (!dir.has_filename()) dir = dir.parent_path();  // a trailing '/'
  if (!dir.is_absolute()) return {};
  const pid_t owner = session_owner(dir.filename().string());
  const std::string parent = dir.parent_path().filename().string();
  const bool ours = owner > 0 && std::find(pids.begin(), pids.end(), owner) != pids.end();
  if (!ours || !(parent.starts_with("ompi.") || parent.starts_with("prte."))) return {};
  return dir;
}

MpiJobFiles find_mpi_job_files(std::span<const ProcessSample> processes) {
  std::vector<pid_t> pids;
  for (const ProcessSample& p : processes) pids.push_back(p.pid);
  MpiJobFiles files;
  std::string text;
  for (const pid_t pid : pids) {
    if (read_small_file(fmt::format("/proc/{}/maps", pid).c_str(), &text) == 0) {
      for_each_line(text, [&](std::string_view line) {
        if (fs::path s = segment_in_maps_line(line); !s.empty()) files.segments.insert(s);
      });
    }
    if (read_small_file(fmt::format("/proc/{}/environ", pid).c_str(), &text) == 0) {
      if (fs::path d = session_dir_in_environ(text, pids); !d.empty()) files.session_dirs.insert(d);
    }
  }
  return files;
}

std::vector<fs::path> remove_mpi_job_files(const MpiJobFiles& files) {
  std::vector<fs::path> removed;
  std::error_code ec;
  for (const fs::path& s : files.segments) {
    if (fs::is_regular_file(fs::symlink_status(s, ec)) && fs::remove(s, ec)) removed.push_back(s);
  }
  for (const fs::path& d : files.session_dirs) {
    if (fs::is_directory(fs::symlink_status(d, ec)) && fs::remove_all(d, ec) > 0) {
      removed.push_back(d);
    }
  }
  return removed;
}

}  // namespace trainscope::profiler
