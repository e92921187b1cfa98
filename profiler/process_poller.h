// Memory of a whole process tree over time, read from /proc.
//
// A ProcessPoller follows one root process and all its descendants: each
// poll() discovers the tree (via /proc/PID/task/TID/children, or by scanning
// every /proc/PID/stat for its ppid where that file does not exist), then reads
// each process's RSS (from /proc/PID/stat) and PSS (/proc/PID/smaps_rollup,
// -1 when unreadable). Each process is classified once per program it runs
// (re-checked when its comm changes, i.e. after exec, and while its
// environment reads empty, as it does in the middle of an exec):
//  * launcher: mpirun, mpiexec, orterun, orted, prte, prted, prterun,
//    hydra_pmi_proxy, mpiexec.hydra, hydra_nameserver;
//  * rank: its environment (/proc/PID/environ) has OMPI_COMM_WORLD_RANK, else
//    PMIX_RANK, else PMI_RANK; the value is its MPI rank;
//  * other: anything else, including processes whose environment we may not
//    read.
// Processes appear and vanish between reads: ENOENT/ESRCH in the middle of a
// poll just drops that process from this poll. A permission error (EACCES,
// EPERM: another user's process) is not fatal either: the field reads -1 and
// one warning per process and file says so (take_warnings()).
//
// Every sample is kept (samples()) for CSV and, later, the results database;
// per-process and whole-tree current/peak/average are kept incrementally so a
// live display costs nothing extra. Averages are over the polls in which the
// process (or, for totals, the tree) was seen; polls are evenly spaced, so this
// is the time average.
//
// Thread-safety: none; one thread owns a poller.
#ifndef TRAINSCOPE_PROFILER_PROCESS_POLLER_H_
#define TRAINSCOPE_PROFILER_PROCESS_POLLER_H_

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/proc_fs.h"

namespace trainscope::profiler {

enum class ProcessRole { kLauncher, kRank, kOther };
inline constexpr std::array<std::string_view, 3> kProcessRoleNames = {"launcher", "rank", "other"};
std::string_view role_name(ProcessRole role);  // kProcessRoleNames

// Launcher by its comm (/proc/PID/stat name, at most 15 characters).
bool is_launcher_name(std::string_view comm);
// MPI rank from an environment block (NUL-separated), or -1.
int rank_from_environ(std::string_view environ);

// One process at one poll.
struct ProcessSample {
  double time_seconds = 0;  // since the poller started
  pid_t pid = 0;
  pid_t ppid = 0;
  ProcessRole role = ProcessRole::kOther;
  int rank = -1;  // MPI rank for role kRank, else -1
  int64_t rss_bytes = -1;
  int64_t pss_bytes = -1;  // -1: not read, unreadable or unsupported
  std::string command;     // command line, shortened to kMaxCommandChars
  bool operator==(const ProcessSample&) const = default;
};
inline constexpr std::size_t kMaxCommandChars = 120;

struct ProcessSummary {
  pid_t pid = 0;
  pid_t ppid = 0;
  ProcessRole role = ProcessRole::kOther;
  int rank = -1;
  std::string command;
  double first_seen_seconds = 0;
  double last_seen_seconds = 0;
  int64_t polls = 0;
  int64_t current_rss_bytes = -1;  // at its last poll
  int64_t peak_rss_bytes = -1;
  double average_rss_bytes = -1;
  int64_t current_pss_bytes = -1;
  int64_t peak_pss_bytes = -1;    // -1 if PSS was never readable
  double average_pss_bytes = -1;  // over the pss_polls
  int64_t pss_polls = 0;          // polls in which PSS was readable
  bool alive = false;             // seen in the latest poll
};

// Sums over the tree per poll, then statistics over polls. PSS sums include
// only processes whose PSS was readable.
struct TreeTotals {
  int64_t polls = 0;
  int current_processes = 0;
  int max_processes = 0;
  int64_t current_rss_bytes = 0;
  int64_t peak_rss_bytes = 0;
  double average_rss_bytes = 0;
  int64_t current_pss_bytes = 0;
  int64_t peak_pss_bytes = 0;
  double average_pss_bytes = 0;
};

struct PollerOptions {
  // smaps_rollup makes the kernel walk each process's page tables: the costly
  // part of a poll for large processes. Off: PSS stays -1.
  bool read_pss = true;
  // Include the root process itself. Off when the root is the monitor (which
  // adopts orphaned descendants as their subreaper) and only its descendants
  // are of interest.
  bool include_root = true;
};

class ProcessPoller {
 public:
  explicit ProcessPoller(pid_t root, PollerOptions options = {});

  // Discovers the tree and samples it; returns this poll's samples (also
  // appended to samples()). Empty when the root has gone.
  const std::vector<ProcessSample>& poll();
  // Same, with an explicit timestamp (seconds since start), for tests.
  const std::vector<ProcessSample>& poll_at(double time_seconds);

  pid_t root() const { return root_; }
  const std::vector<ProcessSample>& last_poll() const { return last_; }
  const std::vector<ProcessSample>& samples() const { return samples_; }
  std::vector<ProcessSummary> process_summaries() const;  // ordered by pid
  const TreeTotals& totals() const { return totals_; }
  // Warnings gathered since the last call (permission errors...).
  std::vector<std::string> take_warnings();

 private:
  struct Known {
    std::string comm;      // to notice exec
    bool settled = false;  // false: classified from an empty environment; look again
    ProcessRole role = ProcessRole::kOther;
    int rank = -1;
    std::string command;
  };

  // The live (non-zombie) processes of the tree with their stat fields.
  std::vector<ProcStat> discover();
  std::vector<ProcStat> discover_by_scan();
  void classify(pid_t pid, const std::string& comm, Known* known);
  void warn_once(pid_t pid, const std::string& file, int err, const std::string& command);

  pid_t root_;
  PollerOptions options_;
  int64_t start_ns_;
  long page_size_;
  bool use_children_files_;
  std::map<pid_t, Known> known_;
  std::map<pid_t, ProcessSummary> summaries_;
  std::vector<ProcessSample> last_;
  std::vector<ProcessSample> samples_;
  TreeTotals totals_;
  double rss_sum_over_polls_ = 0;
  double pss_sum_over_polls_ = 0;
  std::set<std::string> warned_;
  std::vector<std::string> warnings_;
};

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_PROCESS_POLLER_H_
