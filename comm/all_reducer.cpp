#include "comm/all_reducer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "comm/host_group.h"
#include "base/check.h"
#include "kernels/float16.h"

namespace trainscope::comm {
namespace {

using kernels::MemoryCategory;

// --comm-dtype bf16's conversions, element by element (same lengths). Serial,
// not kernels::to_bf16's OpenMP loop: overlap's thread runs them while the
// compute threads are busy with backward.
void to_bf16(std::span<const float> in, std::span<uint16_t> out) {
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = kernels::float_to_bf16(in[i]);
}
void from_bf16(std::span<const uint16_t> in, std::span<float> out) {
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = kernels::bf16_to_float(in[i]);
}

// A bf16 all-reduce in flight, whose result is widened into the gradients
// when it is first seen complete (test() or wait()).
class WideningRequest final : public Request {
 public:
  WideningRequest(std::unique_ptr<Request> inner, std::span<const uint16_t> wire,
                  std::span<float> out)
      : inner_(std::move(inner)), wire_(wire), out_(out) {}
  ~WideningRequest() override { wait(); }
  bool test() override {
    if (!widened_ && inner_->test()) widen();
    return widened_;
  }
  void wait() override {
    if (widened_) return;
    inner_->wait();
    widen();
  }

 private:
  void widen() {
    from_bf16(wire_, out_);
    widened_ = true;
  }
  std::unique_ptr<Request> inner_;
  std::span<const uint16_t> wire_;
  std::span<float> out_;
  bool widened_ = false;
};

class MpiAllReducer final : public AllReducer {
 public:
  MpiAllReducer(Communicator& comm, const AllReducerOptions& o)
      : AllReducer(comm, o.dtype), buffer_(static_cast<std::size_t>(o.numel), o.category) {
    // bf16: the whole arena's staging, so that buckets in flight together
    // (overlap-poll) each have their own part of it.
    if (dtype_ == CommDtype::kBf16) {
      staging_ =
          kernels::Buffer<uint16_t>(static_cast<std::size_t>(o.numel), MemoryCategory::kComm);
    }
  }
  AllReduceAlgorithm algorithm() const override { return AllReduceAlgorithm::kMpi; }
  std::span<float> buffer() override { return buffer_.span(); }
  void sum(int64_t offset, int64_t numel) override {
    if (dtype_ == CommDtype::kFp32) return comm_.all_reduce_sum(range(offset, numel));
    const std::span<uint16_t> wire = stage(offset, numel);
    comm_.all_reduce_sum_bf16(wire);
    from_bf16(wire, range(offset, numel));
  }
  std::unique_ptr<Request> sum_async(int64_t offset, int64_t numel) override {
    if (dtype_ == CommDtype::kFp32) return comm_.all_reduce_sum_async(range(offset, numel));
    const std::span<uint16_t> wire = stage(offset, numel);
    return std::make_unique<WideningRequest>(comm_.all_reduce_sum_bf16_async(wire), wire,
                                             range(offset, numel));
  }
  void reduce_scatter(int64_t offset, int64_t numel) override {
    if (dtype_ == CommDtype::kFp32) return comm_.reduce_scatter_sum(range(offset, numel));
    const std::span<uint16_t> wire = stage(offset, numel);
    comm_.reduce_scatter_sum_bf16(wire);
    const Slice s = slice_of(numel, comm_.size(), comm_.rank());
    from_bf16(wire.subspan(s.offset, s.numel), range(offset + s.offset, s.numel));
  }

 private:
  std::span<float> range(int64_t offset, int64_t numel) {
    return buffer_.span().subspan(static_cast<std::size_t>(offset),
                                  static_cast<std::size_t>(numel));
  }
  // The range rounded to bf16 into its place in the staging buffer.
  std::span<uint16_t> stage(int64_t offset, int64_t numel) {
    const std::span<uint16_t> wire =
        staging_.span().subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(numel));
    to_bf16(range(offset, numel), wire);
    return wire;
  }
  kernels::Buffer<float> buffer_;
  kernels::Buffer<uint16_t> staging_;  // bf16 only
};

// Floats summed at a time: a chunk of this rank's slice stays in L1 while
// every other local rank's matching chunk streams through it once.
constexpr int64_t kChunk = 2048;

// Where a shared region's bf16 staging starts, in floats after the
// gradients: on a 64-byte line of its own.
int64_t staging_offset(int64_t numel) { return (numel + 15) / 16 * 16; }

// Floats of each local rank's shared region: its gradients, then with bf16
// their staging (other local ranks read it, so it must be shared too).
int64_t region_floats(const AllReducerOptions& o) {
  if (o.dtype == CommDtype::kFp32) return o.numel;
  return staging_offset(o.numel) + (o.numel + 1) / 2;
}

// shm and hier (hier = shm plus the across-hosts step between its halves).
class SharedAllReducer final : public AllReducer {
 public:
  SharedAllReducer(Communicator& comm, const AllReducerOptions& o, std::unique_ptr<HostGroup> g)
      : AllReducer(comm, o.dtype),
        algorithm_(o.algorithm),
        category_(o.category),
        group_(std::move(g)),
        mine_(group_->region(group_->local_rank()).first(o.numel)) {
    kernels::adopt_tracked(mine_.size_bytes(), category_);
    // The staging is a communication buffer that happens to live in the window.
    if (dtype_ == CommDtype::kBf16) kernels::adopt_tracked(staging_bytes(), MemoryCategory::kComm);
  }
  ~SharedAllReducer() override {
    kernels::release_tracked(mine_.size_bytes(), category_);
    if (dtype_ == CommDtype::kBf16) {
      kernels::release_tracked(staging_bytes(), MemoryCategory::kComm);
    }
  }
  AllReduceAlgorithm algorithm() const override { return algorithm_; }
  std::span<float> buffer() override { return mine_; }

  void sum(int64_t offset, int64_t numel) override {
    if (dtype_ == CommDtype::kBf16) return sum_bf16(offset, numel);
    const Slice s = reduce_my_slice(offset, numel);
    if (group_->hosts() > 1) {
      group_->across().all_reduce_sum(mine_.subspan(offset + s.offset, s.numel));
      group_->barrier();
    }
    // Every slice is final in its owner's region: copy the others in.
    for (int p = 0; p < group_->local_size(); ++p) {
      if (p == group_->local_rank()) continue;
      const Slice ps = slice_of(numel, group_->local_size(), p);
      std::memcpy(mine_.data() + offset + ps.offset, group_->region(p).data() + offset + ps.offset,
                  ps.numel * sizeof(float));
    }
    group_->barrier();  // no region changes while another rank still reads it
  }
  void reduce_scatter(int64_t offset, int64_t numel) override {
    if (group_->hosts() > 1) {
      throw Error(
          fmt::format("--allreduce {}: a reduce-scatter over several hosts is not "
                      "offered; use --allreduce mpi",
                      enum_name(algorithm_)));
    }
    if (dtype_ == CommDtype::kFp32) {
      reduce_my_slice(offset, numel);  // ends in a barrier: nobody reads my region after
      return;
    }
    // Ends in a barrier too: nobody reads my staging after.
    const Slice s = reduce_my_slice_bf16(offset, numel);
    from_bf16(staging(group_->local_rank()).subspan(offset + s.offset, s.numel),
              mine_.subspan(offset + s.offset, s.numel));
  }

 private:
  // bf16: reduce_my_slice_bf16, then across hosts a bf16 MPI all-reduce of
  // each slice; last every rank widens every slice from its owner's staging
  // into its own gradients (the all-gather, at 2 bytes an element read).
  void sum_bf16(int64_t offset, int64_t numel) {
    const int L = group_->local_size(), me = group_->local_rank();
    const Slice s = reduce_my_slice_bf16(offset, numel);
    if (group_->hosts() > 1) {
      group_->across().all_reduce_sum_bf16(staging(me).subspan(offset + s.offset, s.numel));
      group_->barrier();
    }
    for (int p = 0; p < L; ++p) {
      const Slice ps = slice_of(numel, L, p);
      from_bf16(staging(p).subspan(offset + ps.offset, ps.numel),
                mine_.subspan(offset + ps.offset, ps.numel));
    }
    group_->barrier();  // no staging changes while another rank still reads it
  }
  // The range rounded to bf16 into this rank's staging; then local rank l's
  // slice summed over every local rank's staging, in fp32 and in local rank
  // order, and rounded once back into its own staging. Returns the slice.
  // (Others read only their own slices of it: no race with that write.)
  Slice reduce_my_slice_bf16(int64_t offset, int64_t numel) {
    const int L = group_->local_size(), me = group_->local_rank();
    const Slice s = slice_of(numel, L, me);
    to_bf16(mine_.subspan(offset, numel), staging(me).subspan(offset, numel));
    group_->barrier();  // every rank's contribution is staged
    float acc[kChunk];
    for (int64_t c = 0; c < s.numel; c += kChunk) {
      const int64_t m = std::min(kChunk, s.numel - c);
      const int64_t at = offset + s.offset + c;
      from_bf16(staging(0).subspan(at, m), {acc, static_cast<std::size_t>(m)});
      for (int p = 1; p < L; ++p) {
        const uint16_t* in = staging(p).data() + at;
        for (int64_t i = 0; i < m; ++i) acc[i] += kernels::bf16_to_float(in[i]);
      }
      to_bf16({acc, static_cast<std::size_t>(m)}, staging(me).subspan(at, m));
    }
    group_->barrier();  // every slice reduced
    return s;
  }
  // Local rank p's bf16 staging, as long as the gradients.
  std::span<uint16_t> staging(int p) {
    float* after = group_->region(p).data() + staging_offset(static_cast<int64_t>(mine_.size()));
    return {reinterpret_cast<uint16_t*>(after), mine_.size()};
  }
  std::size_t staging_bytes() const { return mine_.size() * sizeof(uint16_t); }

  // Local rank l's slice of [offset, offset + numel) becomes the sum over
  // the local ranks, in its own region. Returns the slice. The others' chunks
  // are added into this rank's own, chunk by chunk: its lines are read anyway,
  // so writing them back costs no extra read for ownership, and a chunk stays
  // in L1 across the L - 1 passes. Each element is summed by one rank only, so
  // every rank ends with the same bits.
  Slice reduce_my_slice(int64_t offset, int64_t numel) {
    const int L = group_->local_size(), me = group_->local_rank();
    const Slice s = slice_of(numel, L, me);
    group_->barrier();  // every rank's contribution is written
    float* out = mine_.data() + offset + s.offset;
    for (int64_t c = 0; c < s.numel && L > 1; c += kChunk) {
      const int64_t m = std::min(kChunk, s.numel - c);
      for (int p = 0; p < L; ++p) {
        if (p == me) continue;
        add_into(out + c, group_->region(p).data() + offset + s.offset + c, m);
      }
    }
    group_->barrier();  // every slice reduced
    return s;
  }
  static void add_into(float* __restrict out, const float* __restrict in, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] += in[i];
  }

  AllReduceAlgorithm algorithm_;
  MemoryCategory category_;
  std::unique_ptr<HostGroup> group_;
  std::span<float> mine_;
};

// What shm and hier need of where the ranks are; the same error on every rank.
void check_placement(Communicator& comm, const HostGroup& g, AllReduceAlgorithm a) {
  const std::vector<std::string> sizes = comm.all_gather(std::to_string(g.local_size()));
  const bool uneven =
      std::adjacent_find(sizes.begin(), sizes.end(), std::not_equal_to<>()) != sizes.end();
  if (a == AllReduceAlgorithm::kShm && g.hosts() > 1) {
    throw Error(
        fmt::format("--allreduce shm: the job's {} ranks are on {} hosts, and shm sums "
                    "within one host; use --allreduce hier (shm inside each host, MPI "
                    "between hosts) or mpi",
                    comm.size(), g.hosts()));
  }
  if (a == AllReduceAlgorithm::kHier && uneven) {
    throw Error(
        fmt::format("--allreduce hier needs the same number of ranks on every host; the "
                    "ranks' hosts hold {} ranks (by rank); place them evenly "
                    "(mpirun --map-by node, or -npernode)",
                    fmt::join(sizes, ", ")));
  }
}

// The enumerator `names` (in enum order) calls `name`; else an Error naming
// the flag, the kind of thing and the names it takes.
template <typename E, std::size_t N>
E parse_named(const std::array<std::string_view, N>& names, std::string_view name,
              std::string_view flag, std::string_view what) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  throw Error(
      fmt::format("{}: unknown {} '{}' (expected {})", flag, what, name, fmt::join(names, ", ")));
}

}  // namespace

int64_t comm_dtype_bytes(CommDtype d) { return d == CommDtype::kBf16 ? 2 : 4; }

std::unique_ptr<Request> AllReducer::sum_async(int64_t offset, int64_t numel) {
  sum(offset, numel);
  return completed_request();
}

std::unique_ptr<AllReducer> make_all_reducer(Communicator& comm, const AllReducerOptions& o) {
  TS_CHECK(o.numel >= 0);
  if (o.algorithm == AllReduceAlgorithm::kMpi) return std::make_unique<MpiAllReducer>(comm, o);
  std::unique_ptr<HostGroup> group;
  try {
    group = comm.host_group(region_floats(o), o.split_ranks_per_host);
  } catch (const CollectiveError& e) {
    // The MPI group refuses a window larger than /dev/shm on every rank: say for which flag.
    throw CollectiveError(fmt::format("--allreduce {}: {}", enum_name(o.algorithm), e.what()),
                          e.exit_code());
  }
  run_collectively(comm, [&] { check_placement(comm, *group, o.algorithm); });
  return std::make_unique<SharedAllReducer>(comm, o, std::move(group));
}

}  // namespace trainscope::comm
