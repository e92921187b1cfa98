// HostGroup: the ranks of one job that run on the same host, and one region
// of memory per local rank that every local rank can read and write (an
// MPI-3 shared window: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) and
// MPI_Win_allocate_shared behind the "mpi" backend; a plain tracked block for
// the one-process stand-in). The shared-memory all-reduces of
// comm/all_reducer.h are built on it; callers never see MPI.
//
// The regions are counted by the memory tracker in the category given to
// Communicator::host_group's caller (kernels::adopt_tracked), since MPI, not
// tracked_alloc, allocates them.
//
// Every call except region() is collective over the local ranks (barrier) or
// over the ranks with this local rank on every host (across()). One thread at
// a time, as the Communicator.
#ifndef TRAINSCOPE_COMM_HOST_GROUP_H_
#define TRAINSCOPE_COMM_HOST_GROUP_H_

#include <cstdint>
#include <span>

#include "comm/communicator.h"

namespace trainscope::comm {

class HostGroup {
 public:
  virtual ~HostGroup() = default;
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  // Hosts in the job (with split_ranks_per_host: groups), and this one's index.
  virtual int hosts() const = 0;
  virtual int host_index() const = 0;
  // Local rank `local`'s region (floats_per_rank floats, 64-byte aligned).
  virtual std::span<float> region(int local) = 0;
  // Returns once every local rank has called it, with every local rank's
  // writes to the regions before its call visible to every local rank after.
  virtual void barrier() = 0;
  // The ranks with this local rank on every host, host_index() order.
  virtual Communicator& across() = 0;
};

}  // namespace trainscope::comm

#endif  // TRAINSCOPE_COMM_HOST_GROUP_H_
