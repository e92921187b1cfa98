#include "profiler/process_poller.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>

#include "profiler/trace.h"

namespace trainscope::profiler {
namespace {

constexpr std::array<std::string_view, 10> kLauncherNames = {
    "mpirun", "mpiexec", "orterun",         "orted",         "prte",
    "prted",  "prterun", "hydra_pmi_proxy", "mpiexec.hydra", "hydra_nameserver"};

// Environment variables carrying the MPI rank, most specific first.
constexpr std::array<std::string_view, 3> kRankVariables = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                                            "PMI_RANK"};

// The process vanished (or is vanishing) under us: not an error.
bool vanished(int err) { return err == ENOENT || err == ESRCH; }

std::string proc_path(pid_t pid, const char* file) {
  return "/proc/" + std::to_string(pid) + "/" + file;
}

}  // namespace

std::string_view role_name(ProcessRole role) { return kProcessRoleNames[static_cast<int>(role)]; }

bool is_launcher_name(std::string_view comm) {
  return std::find(kLauncherNames.begin(), kLauncherNames.end(), comm) != kLauncherNames.end();
}

int rank_from_environ(std::string_view environ) {
  std::string value;
  for (std::string_view name : kRankVariables) {
    if (!find_environ_value(environ, name, &value)) continue;
    int rank = -1;
    const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), rank);
    if (ec == std::errc() && ptr == value.data() + value.size() && rank >= 0) return rank;
  }
  return -1;
}

ProcessPoller::ProcessPoller(pid_t root, PollerOptions options)
    : root_(root),
      options_(options),
      start_ns_(trace_clock_ns()),
      page_size_(::sysconf(_SC_PAGESIZE)) {
  // CONFIG_PROC_CHILDREN gives each task's children directly; without it we
  // must read the stat file of every process on the machine.
  use_children_files_ =
      ::access("/proc/self/task", R_OK) == 0 &&
      ::access(("/proc/self/task/" + std::to_string(::getpid()) + "/children").c_str(), R_OK) == 0;
}

std::vector<ProcStat> ProcessPoller::discover() {
  if (!use_children_files_) return discover_by_scan();
  std::vector<ProcStat> found;
  std::deque<pid_t> queue{root_};
  std::set<pid_t> seen{root_};
  std::string text;
  while (!queue.empty()) {
    const pid_t pid = queue.front();
    queue.pop_front();
    if (read_small_file(proc_path(pid, "stat").c_str(), &text) != 0) continue;  // gone
    ProcStat stat;
    if (!parse_proc_stat(text, &stat) || stat.state == 'Z') continue;
    found.push_back(stat);
    // Children are listed per thread: a child forked by any thread of an
    // OpenMP or MPI process shows up under that thread only.
    for (const pid_t tid : list_pid_entries(proc_path(pid, "task").c_str())) {
      const std::string path = proc_path(pid, "task/") + std::to_string(tid) + "/children";
      if (read_small_file(path.c_str(), &text) != 0) continue;
      std::size_t pos = 0;
      while (pos < text.size()) {
        std::size_t end = text.find(' ', pos);
        if (end == std::string::npos) end = text.size();
        pid_t child = 0;
        if (parse_pid(std::string_view(text).substr(pos, end - pos), &child) &&
            seen.insert(child).second)
          queue.push_back(child);
        pos = end + 1;
      }
    }
  }
  return found;
}

std::vector<ProcStat> ProcessPoller::discover_by_scan() {
  std::map<pid_t, ProcStat> all;
  std::string text;
  for (const pid_t pid : list_pid_entries("/proc")) {
    if (read_small_file(proc_path(pid, "stat").c_str(), &text) != 0) continue;
    ProcStat stat;
    if (parse_proc_stat(text, &stat) && stat.state != 'Z') all.emplace(pid, stat);
  }
  std::multimap<pid_t, pid_t> children;
  for (const auto& [pid, stat] : all) children.emplace(stat.ppid, pid);
  std::vector<ProcStat> found;
  if (!all.contains(root_)) return found;
  std::deque<pid_t> queue{root_};
  while (!queue.empty()) {
    const pid_t pid = queue.front();
    queue.pop_front();
    found.push_back(all.at(pid));
    const auto [lo, hi] = children.equal_range(pid);
    for (auto it = lo; it != hi; ++it) queue.push_back(it->second);
  }
  return found;
}

void ProcessPoller::warn_once(pid_t pid, const std::string& file, int err,
                              const std::string& command) {
  const std::string key = std::to_string(pid) + "/" + file;
  if (!warned_.insert(key).second) return;
  warnings_.push_back("cannot read /proc/" + key + " (" + command + "): " + std::strerror(err));
}

void ProcessPoller::classify(pid_t pid, const std::string& comm, Known* known) {
  known->comm = comm;
  std::string text;
  const int cmd_err = read_small_file(proc_path(pid, "cmdline").c_str(), &text);
  std::string argv0;
  if (cmd_err == 0 && !text.empty()) {
    argv0 = text.substr(0, text.find('\0'));
    std::replace(text.begin(), text.end(), '\0', ' ');
    while (!text.empty() && text.back() == ' ') text.pop_back();
    known->command = text;
  } else {
    known->command = "[" + comm + "]";
  }
  if (known->command.size() > kMaxCommandChars) {
    known->command.resize(kMaxCommandChars - 3);
    known->command += "...";
  }
  const std::string base =
      argv0.substr(argv0.rfind('/') == std::string::npos ? 0 : argv0.rfind('/') + 1);
  if (is_launcher_name(comm) || is_launcher_name(base)) {
    known->role = ProcessRole::kLauncher;
    known->rank = -1;
    return;
  }
  const int env_err = read_small_file(proc_path(pid, "environ").c_str(), &text);
  if (env_err != 0 && !vanished(env_err)) warn_once(pid, "environ", env_err, known->command);
  known->rank = env_err == 0 ? rank_from_environ(text) : -1;
  known->role = known->rank >= 0 ? ProcessRole::kRank : ProcessRole::kOther;
  // An empty environment is what a process in the middle of exec shows (the
  // new image's name is set before its environment): look again next poll.
  known->settled = known->role != ProcessRole::kOther || !text.empty() || env_err != 0;
}

const std::vector<ProcessSample>& ProcessPoller::poll() {
  return poll_at(static_cast<double>(trace_clock_ns() - start_ns_) * 1e-9);
}

const std::vector<ProcessSample>& ProcessPoller::poll_at(double time_seconds) {
  last_.clear();
  const std::vector<ProcStat> tree = discover();
  std::string text;
  for (const ProcStat& stat : tree) {
    if (!options_.include_root && stat.pid == root_) continue;
    Known& known = known_[stat.pid];
    if (known.comm != stat.comm || !known.settled) classify(stat.pid, stat.comm, &known);
    ProcessSample s;
    s.time_seconds = time_seconds;
    s.pid = stat.pid;
    s.ppid = stat.ppid;
    s.role = known.role;
    s.rank = known.rank;
    s.rss_bytes = stat.rss_pages * page_size_;
    if (options_.read_pss) {
      const int err = read_small_file(proc_path(stat.pid, "smaps_rollup").c_str(), &text);
      if (err == 0) {
        s.pss_bytes = parse_kb_field(text, "Pss:");
      } else if (!vanished(err)) {
        warn_once(stat.pid, "smaps_rollup", err, known.command);
      }
    }
    s.command = known.command;
    last_.push_back(std::move(s));
  }

  for (auto& [pid, summary] : summaries_) summary.alive = false;
  int64_t rss_sum = 0, pss_sum = 0;
  for (const ProcessSample& s : last_) {
    auto [it, inserted] = summaries_.try_emplace(s.pid);
    ProcessSummary& p = it->second;
    if (inserted) p.first_seen_seconds = s.time_seconds;
    p.pid = s.pid;
    p.ppid = s.ppid;
    p.role = s.role;
    p.rank = s.rank;
    p.command = s.command;
    p.last_seen_seconds = s.time_seconds;
    p.alive = true;
    const auto n = static_cast<double>(p.polls);
    p.average_rss_bytes =
        (p.polls == 0 ? 0.0 : p.average_rss_bytes * n) + static_cast<double>(s.rss_bytes);
    p.average_rss_bytes /= n + 1;
    p.current_rss_bytes = s.rss_bytes;
    p.peak_rss_bytes = std::max(p.peak_rss_bytes, s.rss_bytes);
    p.current_pss_bytes = s.pss_bytes;
    if (s.pss_bytes >= 0) {
      // Averaged over the polls where PSS was readable.
      const auto readable = static_cast<double>(p.pss_polls);
      p.average_pss_bytes = ((p.pss_polls == 0 ? 0.0 : p.average_pss_bytes * readable) +
                             static_cast<double>(s.pss_bytes)) /
                            (readable + 1);
      ++p.pss_polls;
      p.peak_pss_bytes = std::max(p.peak_pss_bytes, s.pss_bytes);
      pss_sum += s.pss_bytes;
    }
    ++p.polls;
    rss_sum += s.rss_bytes;
  }
  samples_.insert(samples_.end(), last_.begin(), last_.end());

  if (!last_.empty()) {
    ++totals_.polls;
    rss_sum_over_polls_ += static_cast<double>(rss_sum);
    pss_sum_over_polls_ += static_cast<double>(pss_sum);
    totals_.average_rss_bytes = rss_sum_over_polls_ / static_cast<double>(totals_.polls);
    totals_.average_pss_bytes = pss_sum_over_polls_ / static_cast<double>(totals_.polls);
    totals_.peak_rss_bytes = std::max(totals_.peak_rss_bytes, rss_sum);
    totals_.peak_pss_bytes = std::max(totals_.peak_pss_bytes, pss_sum);
  }
  totals_.current_rss_bytes = rss_sum;
  totals_.current_pss_bytes = pss_sum;
  totals_.current_processes = static_cast<int>(last_.size());
  totals_.max_processes = std::max(totals_.max_processes, totals_.current_processes);
  return last_;
}

std::vector<ProcessSummary> ProcessPoller::process_summaries() const {
  std::vector<ProcessSummary> out;
  out.reserve(summaries_.size());
  for (const auto& [pid, summary] : summaries_) out.push_back(summary);
  return out;
}

std::vector<std::string> ProcessPoller::take_warnings() {
  std::vector<std::string> out;
  out.swap(warnings_);
  return out;
}

}  // namespace trainscope::profiler
