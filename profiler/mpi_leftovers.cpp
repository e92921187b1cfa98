#include "profiler/mpi_leftovers.h"

#include <signal.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <string>
#include <thread>

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

std::string job_id_in_environ(std::string_view environ) {
  std::string value;
  if (!find_environ_value(environ, "OMPI_MCA_ess_base_jobid", &value)) return "";
  uint32_t id = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), id);
  if (ec != std::errc() || end != value.data() + value.size() || id == 0) return "";
  return fmt::format("{:x}", id);
}

bool is_segment_of_job(std::string_view name, std::string_view job_id) {
  const bool segment = std::any_of(std::begin(kSegmentPrefixes), std::end(kSegmentPrefixes),
                                   [&](std::string_view p) { return name.starts_with(p); });
  const std::size_t dot = name.rfind('.');
  if (!segment || job_id.empty() || dot == std::string_view::npos || dot + 1 == name.size()) {
    return false;
  }
  const std::string_view local_rank = name.substr(dot + 1);
  const std::string_view before = name.substr(0, dot);
  return std::all_of(local_rank.begin(), local_rank.end(),
                     [](char c) { return c >= '0' && c <= '9'; }) &&
         before.size() > job_id.size() && before.ends_with(job_id) &&
         before[before.size() - job_id.size() - 1] == '.';
}

void MpiJobFiles::merge(const MpiJobFiles& other) {
  segments.insert(other.segments.begin(), other.segments.end());
  session_dirs.insert(other.session_dirs.begin(), other.session_dirs.end());
  job_ids.insert(other.job_ids.begin(), other.job_ids.end());
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
      if (std::string id = job_id_in_environ(text); !id.empty()) files.job_ids.insert(id);
    }
  }
  return files;
}

std::vector<fs::path> remove_mpi_job_files(const MpiJobFiles& files, const fs::path& shm_dir) {
  std::set<fs::path> segments = files.segments;
  std::error_code ec;
  for (auto it = fs::directory_iterator(shm_dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    for (const std::string& id : files.job_ids) {
      if (is_segment_of_job(name, id)) segments.insert(it->path());
    }
  }
  std::vector<fs::path> removed;
  for (const fs::path& s : segments) {
    if (fs::is_regular_file(fs::symlink_status(s, ec)) && fs::remove(s, ec)) removed.push_back(s);
  }
  for (const fs::path& d : files.session_dirs) {
    if (fs::is_directory(fs::symlink_status(d, ec)) && fs::remove_all(d, ec) > 0) {
      removed.push_back(d);
    }
    // The directory of every session of this user on this host: gone once
    // empty, as mpirun leaves it (remove() leaves a directory in use alone).
    if (fs::remove(d.parent_path(), ec)) removed.push_back(d.parent_path());
  }
  return removed;
}

void MpiJobWatch::note(std::span<const ProcessSample> processes) {
  std::vector<pid_t> pids;
  for (const ProcessSample& p : processes) pids.push_back(p.pid);
  std::string text;
  for (const ProcessSample& p : processes) {
    if (p.role != ProcessRole::kRank || ranks_.contains(p.pid)) continue;
    if (read_small_file(fmt::format("/proc/{}/environ", p.pid).c_str(), &text) != 0) continue;
    std::string identity = process_identity(p.pid);
    if (identity.empty()) continue;
    ranks_.emplace(p.pid, std::move(identity));
    if (std::string id = job_id_in_environ(text); !id.empty()) files_.job_ids.insert(id);
    if (fs::path d = session_dir_in_environ(text, pids); !d.empty()) files_.session_dirs.insert(d);
  }
}

void MpiJobWatch::note_before_kill(std::span<const ProcessSample> processes) {
  note(processes);
  files_.merge(find_mpi_job_files(processes));
}

std::vector<fs::path> MpiJobWatch::remove_leftovers(double grace_s) {
  auto ranks_left = [&] {
    std::vector<pid_t> left;
    for (const auto& [pid, identity] : ranks_) {
      if (process_identity(pid) == identity) left.push_back(pid);
    }
    return left;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  std::vector<pid_t> left = ranks_left();
  while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    left = ranks_left();
  }
  for (const pid_t pid : left) ::kill(pid, SIGKILL);  // orphans of the job, never to finish
  return remove_mpi_job_files(files_);
}

}  // namespace trainscope::profiler
