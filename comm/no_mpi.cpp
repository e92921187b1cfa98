// Stand-in when trainscope is built without MPI (TRAINSCOPE_WITH_MPI=OFF).
#include "comm/communicator.h"
#include "base/check.h"

namespace trainscope::comm {

std::unique_ptr<Communicator> make_mpi_communicator() {
  throw Error("this trainscope was built without MPI (TRAINSCOPE_WITH_MPI=OFF)");
}

}  // namespace trainscope::comm
