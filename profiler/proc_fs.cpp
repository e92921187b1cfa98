#include "profiler/proc_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>

namespace trainscope::profiler {

int read_small_file(const char* path, std::string* out) {
  out->clear();
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n > 0) {
      out->append(buf, static_cast<std::size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      const int err = errno;
      ::close(fd);
      return err;
    }
  }
  ::close(fd);
  return 0;
}

int64_t parse_kb_field(std::string_view text, std::string_view key) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t eol = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, eol - pos);
    if (line.starts_with(key)) {
      std::string_view rest = line.substr(key.size());
      while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
      int64_t kb = 0;
      const auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), kb);
      if (ec != std::errc()) return -1;
      return kb * 1024;
    }
    pos = eol + 1;
  }
  return -1;
}

bool parse_proc_stat(std::string_view text, ProcStat* out) {
  const std::size_t open = text.find('(');
  const std::size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return false;
  {
    const std::string_view pid_text = text.substr(0, open);
    long long pid = 0;
    std::size_t i = 0;
    while (i < pid_text.size() && pid_text[i] == ' ') ++i;
    const auto [ptr, ec] =
        std::from_chars(pid_text.data() + i, pid_text.data() + pid_text.size(), pid);
    if (ec != std::errc()) return false;
    out->pid = static_cast<pid_t>(pid);
  }
  out->comm.assign(text.substr(open + 1, close - open - 1));
  // Fields after comm, 1-based from field 3: state(3) ppid(4) ... utime(14)
  // stime(15) ... rss(24).
  std::string_view rest = text.substr(close + 1);
  int field = 2;
  std::size_t pos = 0;
  bool have_ppid = false;
  while (pos < rest.size()) {
    while (pos < rest.size() && rest[pos] == ' ') ++pos;
    if (pos >= rest.size()) break;
    std::size_t end = rest.find(' ', pos);
    if (end == std::string_view::npos) end = rest.size();
    const std::string_view tok = rest.substr(pos, end - pos);
    ++field;
    long long v = 0;
    const bool numeric = std::from_chars(tok.data(), tok.data() + tok.size(), v).ec == std::errc();
    switch (field) {
      case 3: out->state = tok.empty() ? '?' : tok[0]; break;
      case 4:
        if (!numeric) return false;
        out->ppid = static_cast<pid_t>(v);
        have_ppid = true;
        break;
      case 14: out->utime_ticks = numeric ? static_cast<uint64_t>(v) : 0; break;
      case 15: out->stime_ticks = numeric ? static_cast<uint64_t>(v) : 0; break;
      case 22: out->start_ticks = numeric ? static_cast<uint64_t>(v) : 0; break;
      case 24: out->rss_pages = numeric ? v : 0; break;
      default: break;
    }
    if (field >= 24) break;
    pos = end;
  }
  return have_ppid;
}

std::string process_identity(pid_t pid) {
  std::string stat_text, boot_id;
  ProcStat stat;
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  if (read_small_file(path.c_str(), &stat_text) != 0 || !parse_proc_stat(stat_text, &stat)) {
    return "";
  }
  read_small_file("/proc/sys/kernel/random/boot_id", &boot_id);
  while (!boot_id.empty() && boot_id.back() == '\n') boot_id.pop_back();
  return boot_id + " " + std::to_string(stat.start_ticks);
}

std::string host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof(name) - 1) == 0 ? std::string(name) : std::string();
}

bool process_alive(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

bool parse_pid(std::string_view text, pid_t* pid) {
  long long v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || v <= 0) return false;
  *pid = static_cast<pid_t>(v);
  return true;
}

std::vector<pid_t> list_pid_entries(const char* dir) {
  std::vector<pid_t> pids;
  DIR* d = ::opendir(dir);
  if (d == nullptr) return pids;
  while (const dirent* entry = ::readdir(d)) {
    pid_t pid = 0;
    if (parse_pid(entry->d_name, &pid)) pids.push_back(pid);
  }
  ::closedir(d);
  return pids;
}

bool find_environ_value(std::string_view environ, std::string_view name, std::string* value) {
  std::size_t pos = 0;
  while (pos < environ.size()) {
    std::size_t end = environ.find('\0', pos);
    if (end == std::string_view::npos) end = environ.size();
    const std::string_view entry = environ.substr(pos, end - pos);
    if (entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=') {
      value->assign(entry.substr(name.size() + 1));
      return true;
    }
    pos = end + 1;
  }
  return false;
}

}  // namespace trainscope::profiler
