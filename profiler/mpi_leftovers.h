// What an Open MPI job leaves behind when it dies before mpirun has cleaned
// up after it: each rank's shared-memory segment in /dev/shm (Open MPI 4's
// vader_segment.HOST.UID.JOBID.RANK, 4 MiB each; Open MPI 5's sm_segment.*)
// and mpirun's session directory in the temporary directory
// (ompi.HOST.UID/pid.MPIRUN_PID, PMIx's data store inside).
//
// mpirun removes both when it stops its job in order, which a SIGTERM to
// mpirun alone lets it do; one killed (SIGKILL after the grace, or a
// launcher that cannot run) leaves them for good. So whoever stops a job
// notes its files while its processes still run (find_mpi_job_files, from
// /proc: the segments they have mapped, the session directory their
// environment names) and removes those still there once the job is gone.
//
// Only this job's files are touched: segments by their Open MPI names that
// its own processes mapped, and a session directory only when it is named
// after one of the job's own processes.
//
// Thread-safety: reentrant.
#ifndef TRAINSCOPE_PROFILER_MPI_LEFTOVERS_H_
#define TRAINSCOPE_PROFILER_MPI_LEFTOVERS_H_

#include <filesystem>
#include <set>
#include <span>
#include <string_view>
#include <vector>

#include "profiler/process_poller.h"

namespace trainscope::profiler {

struct MpiJobFiles {
  std::set<std::filesystem::path> segments;      // /dev/shm/...
  std::set<std::filesystem::path> session_dirs;  // .../ompi.HOST.UID/pid.PID
  bool empty() const { return segments.empty() && session_dirs.empty(); }
};

// The files of the job whose processes (a fresh poll of its tree) are
// `processes`. Processes that are gone or unreadable add nothing.
MpiJobFiles find_mpi_job_files(std::span<const ProcessSample> processes);

// The pure parts, for tests: an Open MPI segment named by one line of
// /proc/PID/maps ("" if none); the session directory in an environment block
// (NUL-separated, /proc/PID/environ) if it is named after one of `pids`.
std::filesystem::path segment_in_maps_line(std::string_view line);
std::filesystem::path session_dir_in_environ(std::string_view environ, std::span<const pid_t> pids);

// Removes those of `files` that still exist; returns what it removed.
std::vector<std::filesystem::path> remove_mpi_job_files(const MpiJobFiles& files);

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_MPI_LEFTOVERS_H_
