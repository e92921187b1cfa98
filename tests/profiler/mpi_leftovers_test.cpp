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

// Issue 36: a job's segments are named with its job id, which its ranks'
// environment gives (decimal there, hex in the names).
TEST(MpiLeftoversTest, SegmentsOfAJobAreThoseNamedWithItsId) {
  using namespace std::string_literals;
  EXPECT_EQ(job_id_in_environ("A=1\0OMPI_MCA_ess_base_jobid=1902116865\0"s), "71600001");
  EXPECT_EQ(job_id_in_environ("OMPI_MCA_ess_base_jobid=x1\0"s), "");
  EXPECT_EQ(job_id_in_environ("HOME=/root\0"s), "");
  EXPECT_TRUE(is_segment_of_job("vader_segment.vm.0.71600001.0", "71600001"));
  EXPECT_TRUE(is_segment_of_job("vader_segment.node.example.org.3e8.71600001.12", "71600001"));
  EXPECT_TRUE(is_segment_of_job("sm_segment.vm.0.71600001.1", "71600001"));
  for (const char* other : {"vader_segment.vm.0.171600001.0", "vader_segment.vm.0.71600002.0",
                            "vader_segment.vm.0.71600001.", "vader_segment.vm.0.71600001.x",
                            "open_mpi.71600001.0", "vader_segment.71600001"}) {
    EXPECT_FALSE(is_segment_of_job(other, "71600001")) << other;
  }
  EXPECT_FALSE(is_segment_of_job("vader_segment.vm.0.71600001.0", ""));
}

TEST(MpiLeftoversTest, RemovesWhatIsStillThere) {
  testing::TempDir dir("mpi-leftovers");
  const fs::path session = dir / "ompi.vm.0" / "pid.12";
  fs::create_directories(session / "0");
  fs::create_directories(dir / "ompi.vm.0" / "pid.13");  // another job's
  fs::create_directories(dir / "shm");
  dir.write("segment", "x");
  for (const char* name : {"vader_segment.vm.0.2a0001.0", "vader_segment.vm.0.2a0001.1",
                           "vader_segment.vm.0.2b0001.0"}) {
    dir.write("shm/" + std::string(name), "x");
  }
  MpiJobFiles files;
  files.segments = {dir / "segment", dir / "gone"};
  files.session_dirs = {session};
  files.job_ids = {"2a0001"};
  EXPECT_EQ(remove_mpi_job_files(files, dir / "shm").size(), 4u);
  EXPECT_FALSE(fs::exists(dir / "segment"));
  EXPECT_FALSE(fs::exists(session));
  EXPECT_FALSE(fs::exists(dir / "shm/vader_segment.vm.0.2a0001.0"));
  EXPECT_FALSE(fs::exists(dir / "shm/vader_segment.vm.0.2a0001.1"));
  EXPECT_TRUE(fs::exists(dir / "shm/vader_segment.vm.0.2b0001.0"));  // another job's
  EXPECT_TRUE(fs::exists(dir / "ompi.vm.0" / "pid.13"));
  // The last session gone, the directory of sessions goes too, as mpirun leaves it.
  files = {};
  files.session_dirs = {dir / "ompi.vm.0" / "pid.13"};
  EXPECT_EQ(remove_mpi_job_files(files, dir / "shm").size(), 2u);
  EXPECT_FALSE(fs::exists(dir / "ompi.vm.0"));
}

}  // namespace
}  // namespace trainscope::profiler
