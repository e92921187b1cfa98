// Small readers for Linux /proc files, shared by the memory tracker and the
// process poller.
//
// Reads return an errno value instead of throwing because, for /proc, failure
// is ordinary: a process can exit between listing and reading (ENOENT/ESRCH),
// or belong to another user (EACCES). Callers decide what each means. The
// parsers are pure functions over the file text so tests can feed them
// fixtures.
//
// Thread-safety: all functions are reentrant.
#ifndef TRAINSCOPE_PROFILER_PROC_FS_H_
#define TRAINSCOPE_PROFILER_PROC_FS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trainscope::profiler {

// Reads a whole (small) file into *out. Returns 0 or the errno of the failure.
int read_small_file(const char* path, std::string* out);

// Value of a "Key:   1234 kB" line (as in /proc/PID/status or smaps_rollup),
// in bytes; -1 when the key is absent. `key` includes the colon: "VmRSS:".
int64_t parse_kb_field(std::string_view text, std::string_view key);

// Fields of /proc/PID/stat. comm (in parentheses, may contain spaces and
// parentheses) is located by the last ')'. Returns false if malformed.
struct ProcStat {
  pid_t pid = 0;
  std::string comm;
  char state = '?';
  pid_t ppid = 0;
  int64_t rss_pages = 0;
  uint64_t utime_ticks = 0;  // user CPU time, clock ticks
  uint64_t stime_ticks = 0;  // system CPU time, clock ticks
  uint64_t start_ticks = 0;  // start time after boot, clock ticks
};
bool parse_proc_stat(std::string_view text, ProcStat* out);

// What tells process `pid` apart from any other process this host has had
// or will have under the same pid: the boot id and the process's start time.
// Empty when there is no such process.
std::string process_identity(pid_t pid);

// This machine's host name (gethostname); "" when it cannot be read.
std::string host_name();

// Whether a process with this pid exists on this host (one we may not
// signal counts). Pids are reused: process_identity() tells them apart.
bool process_alive(pid_t pid);

// A positive process or thread id written in decimal, nothing else.
bool parse_pid(std::string_view text, pid_t* pid);

// The ids named by the numeric entries of a /proc directory: every process
// of /proc, every thread of /proc/PID/task. Empty when it cannot be read (the
// process exited).
std::vector<pid_t> list_pid_entries(const char* dir);

// Value of NAME in a NUL-separated environment block (/proc/PID/environ);
// false when absent.
bool find_environ_value(std::string_view environ, std::string_view name, std::string* value);

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_PROC_FS_H_
