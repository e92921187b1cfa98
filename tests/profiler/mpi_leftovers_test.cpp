// profiler/mpi_leftovers.h: which files of a killed Open MPI job are its
// own, read from /proc text, and removing those still there.
#include "profiler/mpi_leftovers.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/temp_dir.h"

namespace trainscope::profiler {
namespace {

namespace fs = std::filesystem;

TEST(MpiLeftoversTest, SegmentsAreOpenMpisNamesInDevShmNotYetUnlinked) {
  const std::string map = "7f0a3c000000-7f0a3c401000 rw-s 00000000 00:1a 12 ";
  EXPECT_EQ(segment_in_maps_line(map + "/dev/shm/vader_segment.vm.0.22e50001.1"),
            "/dev/shm/vader_segment.vm.0.22e50001.1");
  EXPECT_EQ(segment_in_maps_line(map + "/dev/shm/sm_segment.vm.0.7.0"),
            "/dev/shm/sm_segment.vm.0.7.0");
  EXPECT_EQ(segment_in_maps_line(map + "/dev/shm/vader_segment.vm.0.1.0 (deleted)"), "");
  EXPECT_EQ(segment_in_maps_line(map + "/dev/shm/open_mpi.0000"), "");
  EXPECT_EQ(segment_in_maps_line(map + "/dev/shm/vader_segment."), "");
  EXPECT_EQ(segment_in_maps_line(map + "/usr/lib/libc.so.6"), "");
}

TEST(MpiLeftoversTest, ASessionDirectoryCountsOnlyWhenNamedAfterTheJobsOwnProcess) {
  using namespace std::string_literals;
  const pid_t job[] = {4321, 4325};
  const std::string env = "A=1\0PMIX_SERVER_TMPDIR=/tmp/ompi.vm.0/pid.4321\0B=2\0"s;
  EXPECT_EQ(session_dir_in_environ(env, job), "/tmp/ompi.vm.0/pid.4321");
  const std::string orte = "OMPI_MCA_orte_jobfam_session_dir=/tmp/ompi.vm.0/pid.4325/\0"s;
  EXPECT_EQ(session_dir_in_environ(orte, job), "/tmp/ompi.vm.0/pid.4325");
  for (const std::string& bad :
       {"PMIX_SERVER_TMPDIR=/tmp/ompi.vm.0/pid.99\0"s,       // another job's mpirun
        "PMIX_SERVER_TMPDIR=/tmp/other/pid.4321\0"s,         // not a session directory
        "PMIX_SERVER_TMPDIR=ompi.vm.0/pid.4321\0"s,          // relative
        "PMIX_SERVER_TMPDIR=/tmp/ompi.vm.0/pid.4321/..\0"s,  // its parent
        "HOME=/root\0"s}) {
    EXPECT_EQ(session_dir_in_environ(bad, job), "") << bad;
  }
}

TEST(MpiLeftoversTest, RemovesWhatIsStillThere) {
  testing::TempDir dir("mpi-leftovers");
  const fs::path session = dir / "ompi.vm.0" / "pid.12";
  fs::create_directories(session / "0");
  dir.write("segment", "x");
  MpiJobFiles files;
  files.segments = {dir / "segment", dir / "gone"};
  files.session_dirs = {session};
  EXPECT_EQ(remove_mpi_job_files(files).size(), 2u);
  EXPECT_FALSE(fs::exists(dir / "segment"));
  EXPECT_FALSE(fs::exists(session));
  EXPECT_TRUE(fs::exists(dir / "ompi.vm.0"));
}

}  // namespace
}  // namespace trainscope::profiler
