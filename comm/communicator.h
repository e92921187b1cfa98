// Communicator: the small interface through which ranks of a data-parallel
// job talk (MLX's distributed Group, in C++). Backends: "mpi" (Open MPI) and
// "local" (a one-process stand-in where size() == 1 and every collective is a
// no-op). Nothing outside comm/ includes <mpi.h>.
//
// All collectives must be called by every rank in the same order. Buffers are
// reduced in place. One thread at a time may call it (MPI_THREAD_SERIALIZED):
// the training thread, or overlap's communication thread while the training
// thread waits or computes; OpenMP threads inside kernels never do.
#ifndef TRAINSCOPE_COMM_COMMUNICATOR_H_
#define TRAINSCOPE_COMM_COMMUNICATOR_H_

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/check.h"

namespace trainscope::comm {

// The part of an n-element buffer that rank `rank` of `ranks` owns in a
// reduce-scatter or all-gather: balanced, in rank order, so slices tile [0, n)
// and differ in length by at most one element.
struct Slice {
  int64_t offset = 0;
  int64_t numel = 0;
};
Slice slice_of(int64_t n, int ranks, int rank);

// A nonblocking collective in flight. Destroying an unfinished request waits.
class Request {
 public:
  virtual ~Request() = default;
  // Drives progress; true once complete. Cheap: call it between kernels so
  // the transfer advances while computing (MPI progresses only inside calls).
  virtual bool test() = 0;
  virtual void wait() = 0;
};

// A request that is already complete: what collectives that run at once
// (one rank, the shared-memory algorithms) hand back.
std::unique_ptr<Request> completed_request();

class HostGroup;

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "mpi" or "local".
  virtual std::string backend() const = 0;
  // The host this rank runs on.
  virtual std::string host() const = 0;
  // Whether a thread other than the creator may call it (one at a time).
  virtual bool serialized_threads() const { return true; }

  virtual void barrier() = 0;
  virtual void all_reduce_sum(std::span<float> data) = 0;
  virtual void all_reduce_sum(std::span<double> data) = 0;
  virtual void all_reduce_sum(std::span<int64_t> data) = 0;
  virtual void all_reduce_max(std::span<double> data) = 0;
  virtual std::unique_ptr<Request> all_reduce_sum_async(std::span<float> data) = 0;
  // bfloat16 values (the bits of kernels/float16.h): half a float all-reduce's
  // bytes on the wire. Every addition is done in fp32 and rounded back to bf16
  // (to nearest even), so with two ranks the result is their fp32 sum rounded
  // once. (--comm-dtype bf16, as PyTorch DDP's bf16_compress_hook.)
  virtual void all_reduce_sum_bf16(std::span<uint16_t> data) = 0;
  virtual std::unique_ptr<Request> all_reduce_sum_bf16_async(std::span<uint16_t> data) = 0;
  virtual void broadcast(std::span<std::byte> data, int root) = 0;
  // In place over the whole buffer (the same length on every rank): on
  // return this rank's slice_of(data.size(), size(), rank()) holds the sum
  // over ranks; the rest of `data` is unspecified.
  virtual void reduce_scatter_sum(std::span<float> data) = 0;
  // The same over bf16 values, added as all_reduce_sum_bf16 adds them.
  virtual void reduce_scatter_sum_bf16(std::span<uint16_t> data) = 0;
  // In place: every rank's slice (as reduce_scatter_sum's) to every rank.
  virtual void all_gather(std::span<float> data) = 0;
  // Small records (configs, summaries): every rank's string, on every rank.
  virtual std::vector<std::string> all_gather(const std::string& record) = 0;
  // The ranks of this job on this rank's host and memory they share (see
  // comm/host_group.h); `floats_per_rank` floats for each local rank.
  // `split_ranks_per_host` > 0 pretends every host holds only that many
  // ranks (consecutive local ranks), so tests can reach the cross-host path
  // of a hierarchical all-reduce on one machine. Collective.
  virtual std::unique_ptr<HostGroup> host_group(int64_t floats_per_rank,
                                                int split_ranks_per_host = 0) = 0;
  // Ends the whole job now with `code` (no hang if other ranks are blocked).
  [[noreturn]] virtual void abort(int code) = 0;

  // Helpers over the primitives.
  void broadcast_string(std::string* s, int root);
  double all_reduce_sum(double x);
  int64_t all_reduce_sum(int64_t x);
};

// An error every rank throws with the same message (see run_collectively),
// so the program prints it once, from rank 0, and every rank exits cleanly.
class CollectiveError : public Error {
 public:
  using Error::Error;
};

// Runs `fn` on every rank, then agrees on the outcome: if any rank threw
// trainscope::Error (or any other std::exception, as exit code 1), every rank
// throws a CollectiveError carrying the first
// failing rank's message (prefixed "rank R: " in a multi-rank job when the
// ranks failed differently) and the largest exit code. For setup steps whose
// failure may differ between ranks (a file missing on one host), so no rank is
// left waiting in a collective.
void run_collectively(Communicator& comm, const std::function<void()>& fn);

// "auto" (MPI when launched by mpirun, else local), "mpi" or "local".
// Throws trainscope::Error for an unknown name or when MPI is not built in.
std::unique_ptr<Communicator> make_communicator(std::string_view backend = "auto");

// True when this process looks launched by an MPI launcher (its environment
// carries a world size), i.e. when "auto" picks MPI.
bool launched_by_mpi();

// Where this process is in its job before MPI starts, from the environment
// its launcher gives (Open MPI's OMPI_COMM_WORLD_RANK and _SIZE, else PMI's
// PMI_RANK and PMI_SIZE; PMIx's PMIX_RANK for the rank); rank 0 of 1 when it
// was not launched as a rank. For what runs before MPI's initialisation,
// which waits for every rank: the stall watchdog watches it.
struct LaunchedPlace {
  int rank = 0;
  int size = 1;
};
LaunchedPlace launched_place();

// The directory the launcher keeps for this job on this host and removes
// when the job ends (Open MPI's session directory: PMIX_SERVER_TMPDIR, else
// OMPI_MCA_orte_jobfam_session_dir); empty when the environment names none.
std::filesystem::path launcher_job_dir();

// The transport settings this rank runs with, from the environment mpirun
// gives it: every OMPI_MCA_* variable (btl, btl_tcp_links, btl_tcp_if_include,
// oob_tcp_if_include, pml...), keyed without the prefix.
std::vector<std::pair<std::string, std::string>> transport_settings();

}  // namespace trainscope::comm

#endif  // TRAINSCOPE_COMM_COMMUNICATOR_H_
