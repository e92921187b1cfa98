// The load of the host a process runs on, at one moment: how much else wants
// its cores. Each training rank records it as training starts and as it ends
// (results::RankResult::load_start, load_end), so that a result measured on a
// busy machine can be told apart from a slow program (docs/METRICS.md,
// "Machine load", defines when a run counts as measured on a loaded machine).
//
// Sources: /proc/loadavg (load averages), /proc/stat (procs_running), the
// state and parent of every process and thread this process can see
// (/proc/PID/stat, /proc/PID/task/TID/stat) and the cores online. Reading
// never throws: a figure that cannot be read is NaN or -1, and a process that
// exits while being read is skipped. In a container the load averages and
// procs_running are the whole machine's, while the threads counted are those
// of the container's PID namespace.
//
// Thread-safety: reentrant; reads /proc only.
#ifndef TRAINSCOPE_PROFILER_HOST_LOAD_H_
#define TRAINSCOPE_PROFILER_HOST_LOAD_H_

#include <sys/types.h>

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>

namespace trainscope::profiler {

struct HostLoad {
  // /proc/loadavg: runnable and uninterruptible tasks, averaged over 1, 5 and
  // 15 minutes; the job's own included.
  double loadavg_1m = std::numeric_limits<double>::quiet_NaN();
  double loadavg_5m = std::numeric_limits<double>::quiet_NaN();
  double loadavg_15m = std::numeric_limits<double>::quiet_NaN();
  int64_t runnable = -1;        // threads runnable now (procs_running), the job's included
  int64_t other_runnable = -1;  // of which threads of processes outside the job
  int64_t cores = -1;           // logical CPUs online
  // /proc/stat's first line, every CPU's time since boot in clock ticks:
  // all of it, the busy part (all but idle and iowait: every process's, the
  // kernel's network work in interrupts and softirqs included) and the
  // softirq part. Two readings give the machine's busy share between them,
  // which the job's own CPU time misses where the kernel carries its
  // traffic (a virtual cluster's bridge). -1 when unreadable.
  int64_t cpu_ticks_total = -1;
  int64_t cpu_ticks_busy = -1;
  int64_t cpu_ticks_softirq = -1;
  bool operator==(const HostLoad&) const = default;
};

// The host's load now. `job` holds the pids of this job's processes on this
// host (its ranks there); they and their ancestors (the MPI launcher, the
// suite runner, the shell) are the job, every other thread is "other".
HostLoad read_host_load(std::span<const pid_t> job);

// The physical machine this process runs on: the kernel's boot id, which
// every network and UTS namespace on the machine shares, so the virtual
// hosts of one cluster (suites/virtual_cluster.h) have one machine, and one
// set of cores, under their own host names. "" when unreadable.
std::string machine_id();

// ---- The pure parts, for tests ----

// The three load averages of /proc/loadavg's text; false when malformed.
bool parse_loadavg(std::string_view text, HostLoad* load);

// procs_running of /proc/stat's text; -1 when absent.
int64_t parse_procs_running(std::string_view text);

// The "cpu" line of /proc/stat's text into load's cpu_ticks_*; false (and
// nothing set) when absent or malformed.
bool parse_cpu_ticks(std::string_view text, HostLoad* load);

// A process: its parent and how many of its threads are runnable.
struct ProcessThreads {
  pid_t pid = 0;
  pid_t ppid = 0;
  int64_t runnable = 0;
};

// Runnable threads of the processes that are neither in `job` nor an
// ancestor of one of them.
int64_t count_other_runnable(std::span<const ProcessThreads> processes, std::span<const pid_t> job);

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_HOST_LOAD_H_
