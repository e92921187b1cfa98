// What an Open MPI job leaves behind when it dies before mpirun has cleaned
// up after it: each rank's shared-memory segment in /dev/shm (Open MPI 4's
// vader_segment.HOST.UID.JOBID.RANK, 4 MiB each; Open MPI 5's sm_segment.*)
// and mpirun's session directory in the temporary directory
// (ompi.HOST.UID/pid.MPIRUN_PID, PMIx's data store inside).
//
// mpirun removes both when it stops its job in order, which a SIGTERM to
// mpirun alone lets it do; one killed (SIGKILL after the grace, a second
// SIGTERM as `timeout` sends, which makes mpirun exit at once, or a launcher
// that cannot run) leaves them for good. So whoever runs a job notes its
// files while its processes still run (MpiJobWatch as its ranks appear, and
// find_mpi_job_files just before a kill, from /proc: the job id and session
// directory their environment names, the segments they have mapped) and
// removes those still there once the job is gone, whatever ended it.
//
// Only this job's files are touched: segments by their Open MPI names that
// carry its job id (OMPI_MCA_ess_base_jobid, in hex) or that its own
// processes mapped, and a session directory only when it is named after one
// of the job's own processes; the directory of all sessions above it goes
// when it is empty, as mpirun itself does.
//
// Thread-safety: reentrant; an MpiJobWatch belongs to one thread.
#ifndef TRAINSCOPE_PROFILER_MPI_LEFTOVERS_H_
#define TRAINSCOPE_PROFILER_MPI_LEFTOVERS_H_

#include <filesystem>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/process_poller.h"

namespace trainscope::profiler {

struct MpiJobFiles {
  std::set<std::filesystem::path> segments;      // /dev/shm/...
  std::set<std::filesystem::path> session_dirs;  // .../ompi.HOST.UID/pid.PID
  std::set<std::string> job_ids;                 // hex: each rank's segment carries it
  bool empty() const { return segments.empty() && session_dirs.empty() && job_ids.empty(); }
  void merge(const MpiJobFiles& other);
};

// The files of the job whose processes (a fresh poll of its tree) are
// `processes`. Processes that are gone or unreadable add nothing.
MpiJobFiles find_mpi_job_files(std::span<const ProcessSample> processes);

// The pure parts, for tests: an Open MPI segment named by one line of
// /proc/PID/maps ("" if none); the session directory in an environment block
// (NUL-separated, /proc/PID/environ) if it is named after one of `pids`; the
// job id there, in hex ("" if none); whether a /dev/shm name is a segment of
// job `job_id` ("vader_segment.HOST.UID.JOBID.RANK").
std::filesystem::path segment_in_maps_line(std::string_view line);
std::filesystem::path session_dir_in_environ(std::string_view environ, std::span<const pid_t> pids);
std::string job_id_in_environ(std::string_view environ);
bool is_segment_of_job(std::string_view name, std::string_view job_id);

// Removes those of `files` that still exist, and the segments in `shm_dir`
// of its job ids; returns what it removed.
std::vector<std::filesystem::path> remove_mpi_job_files(
    const MpiJobFiles& files, const std::filesystem::path& shm_dir = "/dev/shm");

// A running job's files, noted as its ranks appear (each rank's environment
// is read once: the job id and mpirun's session directory), and removed once
// the job's launcher is gone, whatever ended it.
class MpiJobWatch {
 public:
  // After each poll of the job's tree.
  void note(std::span<const ProcessSample> processes);
  // Just before the job is killed: also what its processes have mapped.
  void note_before_kill(std::span<const ProcessSample> processes);
  // Once the launcher has exited: waits up to `grace_s` for the ranks seen
  // to end (a rank whose mpirun died learns it late, or not at all when
  // stopped), kills those left, then removes what the job left.
  std::vector<std::filesystem::path> remove_leftovers(double grace_s);

 private:
  MpiJobFiles files_;
  std::map<pid_t, std::string> ranks_;  // pid -> process_identity()
};

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_MPI_LEFTOVERS_H_
