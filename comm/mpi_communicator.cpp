// The Open MPI backend. The only file in trainscope that includes <mpi.h>.
#include <mpi.h>
#include <sys/statvfs.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "comm/host_group.h"
#include "base/check.h"
#include "kernels/float16.h"
#include "kernels/storage.h"

namespace trainscope::comm {
namespace {

// Collective failures are not recoverable here: report with the rank and end
// the job, so no other rank hangs waiting.
void mpi_check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "trainscope: rank %d: %s failed: %.*s\n", rank, what, len, msg);
  MPI_Abort(MPI_COMM_WORLD, 1);
}
#define MPI_CHECK(call) mpi_check((call), #call)

// The reduction of --comm-dtype bf16 (a user-defined MPI_Op over 2-byte
// values): each addition in fp32, rounded back to bf16 once, so no precision
// is lost in the sum beyond the one rounding a bf16 result must have.
void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = kernels::bf16_add(a[i], b[i]);
}

class MpiRequest final : public Request {
 public:
  ~MpiRequest() override {
    if (request_ != MPI_REQUEST_NULL) wait();
  }
  MPI_Request* handle() { return &request_; }
  bool test() override {
    if (request_ == MPI_REQUEST_NULL) return true;
    int done = 0;
    MPI_CHECK(MPI_Test(&request_, &done, MPI_STATUS_IGNORE));
    return done != 0;
  }
  void wait() override {
    if (request_ != MPI_REQUEST_NULL) MPI_CHECK(MPI_Wait(&request_, MPI_STATUS_IGNORE));
  }

 private:
  MPI_Request request_ = MPI_REQUEST_NULL;
};

class MpiCommunicator final : public Communicator {
 public:
  // The job's communicator: initialises MPI when nobody has.
  MpiCommunicator() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        throw Error("MPI_Init_thread failed", kExitFailure);
      }
      owns_mpi_ = true;
    }
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    serialized_ = level >= MPI_THREAD_SERIALIZED;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    init(MPI_COMM_WORLD);
  }
  // A sub-communicator this object frees (host groups' across()).
  MpiCommunicator(MPI_Comm sub, bool serialized) : owns_comm_(true), serialized_(serialized) {
    init(sub);
  }
  ~MpiCommunicator() override {
    MPI_Op_free(&bf16_sum_);
    if (owns_comm_) MPI_Comm_free(&comm_);
    if (owns_mpi_) MPI_Finalize();
  }
  MPI_Comm handle() const { return comm_; }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  std::string host() const override { return host_; }
  bool serialized_threads() const override { return serialized_; }

  void barrier() override { MPI_CHECK(MPI_Barrier(comm_)); }
  void all_reduce_sum(std::span<float> d) override {
    reduce(d.data(), d.size(), MPI_FLOAT, MPI_SUM);
  }
  void all_reduce_sum(std::span<double> d) override {
    reduce(d.data(), d.size(), MPI_DOUBLE, MPI_SUM);
  }
  void all_reduce_sum(std::span<int64_t> d) override {
    reduce(d.data(), d.size(), MPI_INT64_T, MPI_SUM);
  }
  void all_reduce_max(std::span<double> d) override {
    reduce(d.data(), d.size(), MPI_DOUBLE, MPI_MAX);
  }
  std::unique_ptr<Request> all_reduce_sum_async(std::span<float> d) override {
    return reduce_async(d.data(), d.size(), MPI_FLOAT, MPI_SUM);
  }
  void all_reduce_sum_bf16(std::span<uint16_t> d) override {
    reduce(d.data(), d.size(), MPI_UINT16_T, bf16_sum_);
  }
  std::unique_ptr<Request> all_reduce_sum_bf16_async(std::span<uint16_t> d) override {
    return reduce_async(d.data(), d.size(), MPI_UINT16_T, bf16_sum_);
  }
  void broadcast(std::span<std::byte> d, int root) override {
    // MPI counts are int: send large buffers in pieces.
    std::size_t done = 0;
    while (done < d.size()) {
      const int n = static_cast<int>(std::min<std::size_t>(d.size() - done, 1 << 30));
      MPI_CHECK(MPI_Bcast(d.data() + done, n, MPI_BYTE, root, comm_));
      done += n;
    }
  }
  std::vector<std::string> all_gather(const std::string& record) override {
    int len = static_cast<int>(record.size());
    std::vector<int> lens(size_), offsets(size_);
    MPI_CHECK(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm_));
    int total = 0;
    for (int r = 0; r < size_; ++r) {
      offsets[r] = total;
      total += lens[r];
    }
    std::string all(total, '\0');
    std::copy(record.begin(), record.end(), all.begin() + offsets[rank_]);
    ring_all_gather(all.data(), lens, offsets, MPI_CHAR);
    std::vector<std::string> out(size_);
    for (int r = 0; r < size_; ++r) out[r] = all.substr(offsets[r], lens[r]);
    return out;
  }
  // A ring over MPI_Sendrecv, in pieces through one small scratch buffer:
  // Open MPI 4.1's MPI_Reduce_scatter allocates a temporary as large as the
  // whole message on every call, and with glibc that is a fresh mmap whose
  // pages fault in each time (measured on seed's 108 MiB: 133 ms against
  // 45 ms for MPI_Allreduce of the same bytes). At step k rank r sends its
  // partial sum of slice (r-1-k) mod N to rank r+1 and adds rank r-1's
  // partial of slice (r-2-k) mod N into its own; after N-1 steps slice r is
  // complete. Each element is summed along one chain: the same bits on every
  // run.
  void reduce_scatter_sum(std::span<float> d) override {
    ring_reduce_scatter(d, MPI_FLOAT, scratch_, [](float& into, float x) { into += x; });
  }
  void reduce_scatter_sum_bf16(std::span<uint16_t> d) override {
    ring_reduce_scatter(d, MPI_UINT16_T, scratch_bf16_,
                        [](uint16_t& into, uint16_t x) { into = kernels::bf16_add(into, x); });
  }
  void all_gather(std::span<float> d) override {
    if (size_ == 1) return;
    const auto [counts, offsets] = slice_counts(d.size());
    ring_all_gather(d.data(), counts, offsets, MPI_FLOAT);
  }
  std::unique_ptr<HostGroup> host_group(int64_t floats_per_rank, int split_ranks_per_host) override;
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

 private:
  template <typename T, typename Add>
  void ring_reduce_scatter(std::span<T> d, MPI_Datatype type, kernels::Buffer<T>& scratch_buf,
                           Add add) {
    if (size_ == 1) return;
    const auto n = static_cast<int64_t>(d.size());
    const int right = (rank_ + 1) % size_, left = (rank_ + size_ - 1) % size_;
    for (int k = 0; k < size_ - 1; ++k) {
      const Slice send = slice_of(n, size_, ((rank_ - 1 - k) % size_ + size_) % size_);
      const Slice recv = slice_of(n, size_, ((rank_ - 2 - k) % size_ + size_) % size_);
      // Slices differ by at most one element: pieces pair up by index.
      for (int64_t done = 0; done < std::max(send.numel, recv.numel); done += kPiece) {
        const int out = static_cast<int>(std::clamp<int64_t>(send.numel - done, 0, kPiece));
        const int in = static_cast<int>(std::clamp<int64_t>(recv.numel - done, 0, kPiece));
        T* scratch = scratch_for(scratch_buf);
        MPI_CHECK(MPI_Sendrecv(d.data() + send.offset + done, out, type, right, 0, scratch, in,
                               type, left, 0, comm_, MPI_STATUS_IGNORE));
        T* into = d.data() + recv.offset + done;
        for (int i = 0; i < in; ++i) add(into[i], scratch[i]);
      }
    }
  }
  // Every rank's block (counts[r] elements of `type` at offsets[r] of
  // `data`, its own in place) passed along the ring: at step k rank r sends
  // block r - k to rank r + 1 and receives block r - k - 1 from rank r - 1.
  // Not MPI_Allgatherv: with btl_tcp_links 2 Open MPI 4.1's Bruck
  // all-gather hung 8 hosts' end-of-run gather of their reports in 4 of 15
  // replays (issue 38), between pairs the steps' ring all-reduces never
  // used; a ring uses only those pairs, one way each.
  void ring_all_gather(void* data, const std::vector<int>& counts, const std::vector<int>& offsets,
                       MPI_Datatype type) {
    int size = 1;
    MPI_Type_size(type, &size);
    auto* bytes = static_cast<char*>(data);
    const int right = (rank_ + 1) % size_, left = (rank_ + size_ - 1) % size_;
    for (int k = 0; k + 1 < size_; ++k) {
      const int out = ((rank_ - k) % size_ + size_) % size_;
      const int in = ((rank_ - k - 1) % size_ + size_) % size_;
      MPI_CHECK(MPI_Sendrecv(bytes + static_cast<std::ptrdiff_t>(offsets[out]) * size, counts[out],
                             type, right, kRingTag,
                             bytes + static_cast<std::ptrdiff_t>(offsets[in]) * size, counts[in],
                             type, left, kRingTag, comm_, MPI_STATUS_IGNORE));
    }
  }
  static constexpr int kRingTag = 7412;

  void init(MPI_Comm comm) {
    comm_ = comm;
    MPI_CHECK(MPI_Op_create(&bf16_sum, /*commute=*/1, &bf16_sum_));
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    MPI_Get_processor_name(name, &len);
    host_.assign(name, len);
  }
  static constexpr int64_t kPiece = int64_t{1} << 20;  // elements per ring message
  template <typename T>
  static T* scratch_for(kernels::Buffer<T>& scratch) {
    if (scratch.size() < static_cast<std::size_t>(kPiece)) {
      scratch =
          kernels::Buffer<T>(static_cast<std::size_t>(kPiece), kernels::MemoryCategory::kComm);
    }
    return scratch.data();
  }
  // Every rank's slice_of(n) as MPI's int counts and displacements.
  std::pair<std::vector<int>, std::vector<int>> slice_counts(std::size_t n) const {
    TS_CHECK(n <= static_cast<std::size_t>(INT32_MAX)) << "a reduce-scatter of " << n << " floats";
    std::vector<int> counts(size_), offsets(size_);
    for (int r = 0; r < size_; ++r) {
      const Slice s = slice_of(static_cast<int64_t>(n), size_, r);
      counts[r] = static_cast<int>(s.numel);
      offsets[r] = static_cast<int>(s.offset);
    }
    return {counts, offsets};
  }
  template <typename V>
  std::unique_ptr<Request> reduce_async(V* data, std::size_t n, MPI_Datatype type, MPI_Op op) {
    auto req = std::make_unique<MpiRequest>();
    TS_CHECK(n <= static_cast<std::size_t>(INT32_MAX));
    MPI_CHECK(
        MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(n), type, op, comm_, req->handle()));
    return req;
  }
  template <typename V>
  void reduce(V* data, std::size_t n, MPI_Datatype type, MPI_Op op) {
    if (size_ == 1) return;
    std::size_t done = 0;
    while (done < n) {
      const int count = static_cast<int>(std::min<std::size_t>(n - done, 1 << 30));
      MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data + done, count, type, op, comm_));
      done += count;
    }
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::string host_;
  MPI_Op bf16_sum_ = MPI_OP_NULL;           // bf16_sum, for this communicator's bf16 collectives
  kernels::Buffer<float> scratch_;          // reduce_scatter_sum's receive piece
  kernels::Buffer<uint16_t> scratch_bf16_;  // reduce_scatter_sum_bf16's
  bool owns_mpi_ = false;
  bool owns_comm_ = false;
  bool serialized_ = false;
};

// The ranks on one host (MPI_COMM_TYPE_SHARED, optionally cut into groups of
// split_ranks_per_host) and one MPI-3 shared window with a region per local
// rank. The window stays in a passive-target epoch (lock_all) for its whole
// life; barrier() brackets MPI_Barrier with MPI_Win_sync, the unified memory
// model's way to make the regions' stores visible across processes.
class MpiHostGroup final : public HostGroup {
 public:
  MpiHostGroup(MpiCommunicator& world, int64_t floats_per_rank, int split_ranks_per_host) {
    MPI_Comm shared = MPI_COMM_NULL;
    MPI_CHECK(MPI_Comm_split_type(world.handle(), MPI_COMM_TYPE_SHARED, world.rank(), MPI_INFO_NULL,
                                  &shared));
    int host_ranks = 1;  // every rank on the host, whatever split_ranks_per_host
    MPI_Comm_size(shared, &host_ranks);
    if (split_ranks_per_host > 0) {
      int r = 0;
      MPI_Comm_rank(shared, &r);
      MPI_CHECK(MPI_Comm_split(shared, r / split_ranks_per_host, r, &local_));
      MPI_Comm_free(&shared);
    } else {
      local_ = shared;
    }
    MPI_Comm_rank(local_, &local_rank_);
    MPI_Comm_size(local_, &local_size_);
    number_hosts(world);
    try {
      allocate(world, floats_per_rank, host_ranks);
    } catch (...) {
      MPI_Comm_free(&local_);  // the destructor does not run
      throw;
    }
  }
  ~MpiHostGroup() override {
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
    MPI_Comm_free(&local_);
  }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  int hosts() const override { return hosts_; }
  int host_index() const override { return host_index_; }
  std::span<float> region(int local) override { return regions_.at(local); }
  void barrier() override {
    MPI_CHECK(MPI_Win_sync(win_));
    MPI_CHECK(MPI_Barrier(local_));
    MPI_CHECK(MPI_Win_sync(win_));
  }
  Communicator& across() override { return *across_; }

 private:
  // Hosts are numbered by their first rank: local rank 0 of each host joins
  // a leaders' communicator, whose rank is the host's index.
  void number_hosts(MpiCommunicator& world) {
    MPI_Comm leaders = MPI_COMM_NULL;
    MPI_CHECK(MPI_Comm_split(world.handle(), local_rank_ == 0 ? 0 : MPI_UNDEFINED, world.rank(),
                             &leaders));
    int ids[2] = {0, 0};
    if (leaders != MPI_COMM_NULL) {
      MPI_Comm_rank(leaders, &ids[0]);
      MPI_Comm_size(leaders, &ids[1]);
      MPI_Comm_free(&leaders);
    }
    MPI_CHECK(MPI_Bcast(ids, 2, MPI_INT, 0, local_));
    host_index_ = ids[0];
    hosts_ = ids[1];
    MPI_Comm across = MPI_COMM_NULL;
    MPI_CHECK(MPI_Comm_split(world.handle(), local_rank_, host_index_, &across));
    across_ = std::make_unique<MpiCommunicator>(across, world.serialized_threads());
  }
  void allocate(MpiCommunicator& world, int64_t floats, int host_ranks) {
    // Not contiguous: each rank's region is its own (first-touched by it,
    // so on its NUMA node). Open MPI does not align the segments: 64 spare
    // bytes let every region start on a cache line.
    const auto bytes = static_cast<MPI_Aint>(floats * 4 + 64);
    // Agreed over the whole job, not the host: ranks of a host with room
    // would otherwise go on into collectives the refused ones never join.
    run_collectively(world, [&] { check_room(world.host(), bytes, host_ranks); });
    MPI_Info info = MPI_INFO_NULL;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    float* base = nullptr;
    MPI_CHECK(MPI_Win_allocate_shared(bytes, sizeof(float), info, local_, &base, &win_));
    MPI_Info_free(&info);
    MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_));
    std::memset(base, 0, static_cast<std::size_t>(bytes));
    for (int p = 0; p < local_size_; ++p) {
      MPI_Aint size = 0;
      int disp = 0;
      float* ptr = nullptr;
      MPI_CHECK(MPI_Win_shared_query(win_, p, &size, &disp, &ptr));
      const auto address = reinterpret_cast<std::uintptr_t>(ptr);
      regions_.emplace_back(reinterpret_cast<float*>((address + 63) / 64 * 64),
                            static_cast<std::size_t>(floats));
    }
    barrier();  // every region zeroed before anyone uses one
  }

  // Open MPI backs the window with a file in /dev/shm (a tmpfs): one larger
  // than the room there is created, then kills the job with SIGBUS when its
  // pages are first touched. So it is refused first. Every rank of the host
  // (all its groups, when split) maps `bytes` of it.
  static void check_room(const std::string& host, MPI_Aint bytes, int host_ranks) {
    struct statvfs fs {};
    if (::statvfs(kSharedMemoryDir, &fs) != 0) return;  // not Linux's tmpfs: MPI decides
    const double need = static_cast<double>(host_ranks) * static_cast<double>(bytes);
    const double room = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
    if (need <= room) return;
    throw Error(fmt::format(
        "the shared window needs {} in {} for the {} ranks on host {} ({} each), and {} is free "
        "there; use fewer ranks per host or smaller messages, or --allreduce mpi",
        kernels::format_bytes(need), kSharedMemoryDir, host_ranks, host,
        kernels::format_bytes(static_cast<double>(bytes)), kernels::format_bytes(room)));
  }
  static constexpr const char* kSharedMemoryDir = "/dev/shm";

  MPI_Comm local_ = MPI_COMM_NULL;
  int local_rank_ = 0, local_size_ = 1, hosts_ = 1, host_index_ = 0;
  std::unique_ptr<MpiCommunicator> across_;
  MPI_Win win_ = MPI_WIN_NULL;
  std::vector<std::span<float>> regions_;
};

std::unique_ptr<HostGroup> MpiCommunicator::host_group(int64_t floats_per_rank,
                                                       int split_ranks_per_host) {
  return std::make_unique<MpiHostGroup>(*this, floats_per_rank, split_ranks_per_host);
}

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() {
  return std::make_unique<MpiCommunicator>();
}

}  // namespace trainscope::comm
