// AllReducer: how a sum over ranks is carried out (--allreduce), orthogonal
// to the gradient strategies of comm/grad_sync.h that decide WHEN and over
// WHICH ranges it runs. It owns the buffer it reduces (the gradient arena),
// because the shared-memory algorithms need it inside a shared window:
//  * mpi: Open MPI's MPI_Allreduce (its own algorithm choice, or the one
//    forced by coll_tuned_allreduce_algorithm) on an ordinary buffer.
//  * shm: the ranks of one host reduce straight out of each other's buffers
//    in an MPI-3 shared window (comm/host_group.h): each local rank sums its
//    1/L slice of the range from every local buffer into its own, then copies
//    the other slices back from their owners. Every rank reads the range
//    once and writes it once (plus its slice read L-1 more times), whatever
//    the rank count: busbw bounded by memory bandwidth, not by a transport.
//  * hier: shm's reduce-scatter inside each host, an MPI all-reduce of each
//    slice among the ranks of the same local index on every host (all slices
//    in parallel), then shm's all-gather inside each host (Horovod's and
//    NCCL's two-level all-reduce).
//
// What travels (--comm-dtype), under any algorithm: fp32, the gradients as
// they are; or bf16, as PyTorch DDP's bf16_compress_hook: each reduced range
// is rounded to bf16 (to nearest even) into a staging buffer, summed with
// every addition in fp32, and the bf16 result converted back to fp32 in
// place. Half the bytes move, every rank ends with the same bits, and the
// result is within bf16 precision of the fp32 sum (exactly the fp32 sum of
// two ranks' rounded values, rounded once). The one-process stand-in rounds
// too, so one rank sees the same precision as many.
//
// Collective: every rank calls the same functions on the same ranges in the
// same order. One thread at a time (as the Communicator).
#ifndef TRAINSCOPE_COMM_ALL_REDUCER_H_
#define TRAINSCOPE_COMM_ALL_REDUCER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "comm/communicator.h"
#include "kernels/storage.h"
#include "options/choices.h"

namespace trainscope::comm {

// Their names: options/choices.h.
using options::AllReduceAlgorithm;
using options::CommDtype;

// Bytes one gradient element takes on the wire.
int64_t comm_dtype_bytes(CommDtype d);

struct AllReducerOptions {
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::kMpi;
  CommDtype dtype = CommDtype::kFp32;
  int64_t numel = 0;  // floats in the buffer
  kernels::MemoryCategory category = kernels::MemoryCategory::kGradients;
  // Tests only: see Communicator::host_group.
  int split_ranks_per_host = 0;
};

class AllReducer {
 public:
  virtual ~AllReducer() = default;
  virtual AllReduceAlgorithm algorithm() const = 0;
  CommDtype dtype() const { return dtype_; }
  // Bytes that reducing `numel` elements moves per rank's message (what the
  // gradient strategies record): 4 or 2 per element.
  int64_t wire_bytes(int64_t numel) const { return numel * comm_dtype_bytes(dtype_); }
  Communicator& comm() const { return comm_; }
  // numel floats, zeroed at creation, counted in the options' category.
  virtual std::span<float> buffer() = 0;
  // On every rank, buffer[offset, offset + numel) becomes its sum over ranks.
  virtual void sum(int64_t offset, int64_t numel) = 0;
  // The same, nonblocking where the algorithm is (mpi: MPI_Iallreduce); shm
  // and hier run it now and return a finished request.
  virtual std::unique_ptr<Request> sum_async(int64_t offset, int64_t numel);
  // On return this rank's slice_of(numel, comm().size(), comm().rank()) of
  // the range (offsets relative to `offset`) holds the sum over ranks; the
  // rest of the range is unspecified. Not offered by hier (Error).
  virtual void reduce_scatter(int64_t offset, int64_t numel) = 0;

 protected:
  AllReducer(Communicator& comm, CommDtype dtype) : comm_(comm), dtype_(dtype) {}
  Communicator& comm_;
  CommDtype dtype_;
};

// Collective. Errors every rank agrees on (run_collectively): shm when the
// ranks are not all on one host (use hier), hier when hosts hold different
// numbers of ranks, shm and hier under MPI when the host's windows would not
// fit in /dev/shm (the one-process stand-in's buffer is ordinary memory).
std::unique_ptr<AllReducer> make_all_reducer(Communicator& comm, const AllReducerOptions& options);

}  // namespace trainscope::comm

#endif  // TRAINSCOPE_COMM_ALL_REDUCER_H_
