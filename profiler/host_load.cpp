#include "profiler/host_load.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "profiler/proc_fs.h"

namespace trainscope::profiler {

namespace {

// The process's parent and its runnable threads; false when it is gone.
bool read_process_threads(pid_t pid, ProcessThreads* out) {
  const std::string dir = "/proc/" + std::to_string(pid);
  std::string text;
  ProcStat stat;
  if (read_small_file((dir + "/stat").c_str(), &text) != 0 || !parse_proc_stat(text, &stat)) {
    return false;
  }
  *out = {pid, stat.ppid, 0};
  for (const pid_t tid : list_pid_entries((dir + "/task").c_str())) {
    const std::string path = dir + "/task/" + std::to_string(tid) + "/stat";
    ProcStat thread;
    if (read_small_file(path.c_str(), &text) == 0 && parse_proc_stat(text, &thread) &&
        thread.state == 'R') {
      ++out->runnable;
    }
  }
  return true;
}

}  // namespace

bool parse_loadavg(std::string_view text, HostLoad* load) {
  // "0.52 0.58 0.59 2/345 12345": three averages, then running/total and the last pid.
  double values[3] = {};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (double& v : values) {
    while (p < end && *p == ' ') ++p;
    const auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc()) return false;
    p = next;
  }
  load->loadavg_1m = values[0];
  load->loadavg_5m = values[1];
  load->loadavg_15m = values[2];
  return true;
}

int64_t parse_procs_running(std::string_view text) {
  constexpr std::string_view kKey = "procs_running ";
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t eol = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, eol - pos);
    if (line.starts_with(kKey)) {
      int64_t v = -1;
      const auto [ptr, ec] =
          std::from_chars(line.data() + kKey.size(), line.data() + line.size(), v);
      return ec == std::errc() ? v : -1;
    }
    pos = eol + 1;
  }
  return -1;
}

bool parse_cpu_ticks(std::string_view text, HostLoad* load) {
  // "cpu  user nice system idle iowait irq softirq steal guest guest_nice"; guest time is
  // inside user already. Kernels before 2.6.33 give fewer columns: the missing are 0.
  constexpr std::string_view kKey = "cpu ";
  if (!text.starts_with(kKey)) return false;
  const std::string_view line = text.substr(0, text.find('\n'));
  int64_t v[8] = {};
  const char* p = line.data() + kKey.size();
  const char* end = line.data() + line.size();
  int columns = 0;
  for (; columns < 8; ++columns) {
    while (p < end && *p == ' ') ++p;
    if (p == end) break;
    const auto [next, ec] = std::from_chars(p, end, v[columns]);
    if (ec != std::errc() || v[columns] < 0) return false;
    p = next;
  }
  if (columns < 4) return false;
  int64_t total = 0;
  for (const int64_t t : v) total += t;
  const int64_t idle = v[3] + v[4];
  load->cpu_ticks_total = total;
  load->cpu_ticks_busy = total - idle;
  load->cpu_ticks_softirq = v[6];
  return true;
}

int64_t count_other_runnable(std::span<const ProcessThreads> processes,
                             std::span<const pid_t> job) {
  std::map<pid_t, pid_t> parent;
  for (const auto& p : processes) parent[p.pid] = p.ppid;
  std::set<pid_t> ours;
  for (pid_t pid : job) {
    // Up to init (pid 1), which is everyone's ancestor and not part of any job.
    while (pid > 1 && ours.insert(pid).second) {
      const auto it = parent.find(pid);
      if (it == parent.end()) break;
      pid = it->second;
    }
  }
  int64_t other = 0;
  for (const auto& p : processes) {
    if (!ours.contains(p.pid)) other += p.runnable;
  }
  return other;
}

std::string machine_id() {
  std::string text;
  if (read_small_file("/proc/sys/kernel/random/boot_id", &text) != 0) return "";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

HostLoad read_host_load(std::span<const pid_t> job) {
  HostLoad load;
  std::string text;
  if (read_small_file("/proc/loadavg", &text) == 0) parse_loadavg(text, &load);
  if (read_small_file("/proc/stat", &text) == 0) {
    load.runnable = parse_procs_running(text);
    parse_cpu_ticks(text, &load);
  }
  std::vector<ProcessThreads> processes;
  for (const pid_t pid : list_pid_entries("/proc")) {
    ProcessThreads p;
    if (read_process_threads(pid, &p)) processes.push_back(p);
  }
  if (!processes.empty()) load.other_runnable = count_other_runnable(processes, job);
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  load.cores = cores > 0 ? cores : -1;
  return load;
}

}  // namespace trainscope::profiler
