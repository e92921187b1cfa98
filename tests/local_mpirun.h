// The start of a test's MPI job on this machine: mpirun with `ranks` ranks,
// more ranks than cores allowed, unbound, and its TCP traffic (the
// transport's and the launcher's own) pinned to loopback, so that a test
// never sends to another address; and what mpirun needs to run as root.
#ifndef TRAINSCOPE_TESTS_LOCAL_MPIRUN_H_
#define TRAINSCOPE_TESTS_LOCAL_MPIRUN_H_

#include <string>
#include <vector>

namespace trainscope::testing {

inline std::vector<std::string> local_mpirun(int ranks) {
  return {"mpirun",
          "-np",
          std::to_string(ranks),
          "--oversubscribe",
          "--bind-to",
          "none",
          "--mca",
          "btl_tcp_if_include",
          "lo",
          "--mca",
          "oob_tcp_if_include",
          "lo"};
}

inline const std::vector<std::string> kMpirunAsRoot = {"OMPI_ALLOW_RUN_AS_ROOT=1",
                                                       "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};

}  // namespace trainscope::testing

#endif  // TRAINSCOPE_TESTS_LOCAL_MPIRUN_H_
