// What the MPI tests share: the job's communicator (made by mpi_test.cpp's
// main) and how the hierarchical all-reduce splits one machine into hosts.
#ifndef TRAINSCOPE_TESTS_COMM_MPI_WORLD_H_
#define TRAINSCOPE_TESTS_COMM_MPI_WORLD_H_

#include <algorithm>

#include "comm/communicator.h"

namespace trainscope {

extern comm::Communicator* g_comm;

// Ranks per pretended host for --allreduce hier on one machine.
inline int split_for_hier(int ranks) { return std::max(1, ranks / 2); }

}  // namespace trainscope

#endif  // TRAINSCOPE_TESTS_COMM_MPI_WORLD_H_
