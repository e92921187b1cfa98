#include "comm/all_reducer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "comm/host_group.h"
#include "kernels/check.h"

namespace trainscope::comm {
namespace {

using kernels::MemoryCategory;

class MpiAllReducer final : public AllReducer {
 public:
  MpiAllReducer(Communicator& comm, const AllReducerOptions& o)
      : AllReducer(comm), buffer_(static_cast<std::size_t>(o.numel), o.category) {}
  AllReduceAlgorithm algorithm() const override { return AllReduceAlgorithm::kMpi; }
  std::span<float> buffer() override { return buffer_.span(); }
  void sum(int64_t offset, int64_t numel) override {
    comm_.all_reduce_sum(range(offset, numel));
  }
  std::unique_ptr<Request> sum_async(int64_t offset, int64_t numel) override {
    return comm_.all_reduce_sum_async(range(offset, numel));
  }
  void reduce_scatter(int64_t offset, int64_t numel) override {
    comm_.reduce_scatter_sum(range(offset, numel));
  }

 private:
  std::span<float> range(int64_t offset, int64_t numel) {
    return buffer_.span().subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(numel));
  }
  kernels::Buffer<float> buffer_;
};

// Floats summed at a time: a chunk of this rank's slice stays in L1 while
// every other local rank's matching chunk streams through it once.
constexpr int64_t kChunk = 2048;

// shm and hier (hier = shm plus the across-hosts step between its halves).
class SharedAllReducer final : public AllReducer {
 public:
  SharedAllReducer(Communicator& comm, const AllReducerOptions& o, std::unique_ptr<HostGroup> g)
      : AllReducer(comm), algorithm_(o.algorithm), category_(o.category), group_(std::move(g)),
        mine_(group_->region(group_->local_rank())) {
    kernels::adopt_tracked(mine_.size_bytes(), category_);
  }
  ~SharedAllReducer() override { kernels::release_tracked(mine_.size_bytes(), category_); }
  AllReduceAlgorithm algorithm() const override { return algorithm_; }
  std::span<float> buffer() override { return mine_; }

  void sum(int64_t offset, int64_t numel) override {
    const Slice s = reduce_my_slice(offset, numel);
    if (group_->hosts() > 1) {
      group_->across().all_reduce_sum(mine_.subspan(offset + s.offset, s.numel));
      group_->barrier();
    }
    // Every slice is final in its owner's region: copy the others in.
    for (int p = 0; p < group_->local_size(); ++p) {
      if (p == group_->local_rank()) continue;
      const Slice ps = slice_of(numel, group_->local_size(), p);
      std::memcpy(mine_.data() + offset + ps.offset,
                  group_->region(p).data() + offset + ps.offset, ps.numel * sizeof(float));
    }
    group_->barrier();  // no region changes while another rank still reads it
  }
  void reduce_scatter(int64_t offset, int64_t numel) override {
    if (group_->hosts() > 1) {
      throw Error(fmt::format("--allreduce {}: a reduce-scatter over several hosts is not "
                              "offered; use --allreduce mpi",
                              allreduce_algorithm_name(algorithm_)));
    }
    reduce_my_slice(offset, numel);  // ends in a barrier: nobody reads my region after
  }

 private:
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
  const bool uneven = std::adjacent_find(sizes.begin(), sizes.end(), std::not_equal_to<>()) !=
                      sizes.end();
  if (a == AllReduceAlgorithm::kShm && g.hosts() > 1) {
    throw Error(fmt::format("--allreduce shm: the job's {} ranks are on {} hosts, and shm sums "
                            "within one host; use --allreduce hier (shm inside each host, MPI "
                            "between hosts) or mpi",
                            comm.size(), g.hosts()));
  }
  if (a == AllReduceAlgorithm::kHier && uneven) {
    throw Error(fmt::format("--allreduce hier needs the same number of ranks on every host; the "
                            "ranks' hosts hold {} ranks (by rank); place them evenly "
                            "(mpirun --map-by node, or -npernode)",
                            fmt::join(sizes, ", ")));
  }
}

}  // namespace

std::unique_ptr<Request> AllReducer::sum_async(int64_t offset, int64_t numel) {
  sum(offset, numel);
  return completed_request();
}

AllReduceAlgorithm parse_allreduce_algorithm(std::string_view name, std::string_view flag) {
  for (std::size_t i = 0; i < kAllReduceAlgorithmNames.size(); ++i) {
    if (kAllReduceAlgorithmNames[i] == name) return static_cast<AllReduceAlgorithm>(i);
  }
  throw Error(fmt::format("{}: unknown all-reduce algorithm '{}' (expected {})", flag, name,
                          fmt::join(kAllReduceAlgorithmNames, ", ")));
}

std::string_view allreduce_algorithm_name(AllReduceAlgorithm a) {
  return kAllReduceAlgorithmNames[static_cast<std::size_t>(a)];
}

std::unique_ptr<AllReducer> make_all_reducer(Communicator& comm, const AllReducerOptions& o) {
  TS_CHECK(o.numel >= 0);
  if (o.algorithm == AllReduceAlgorithm::kMpi) return std::make_unique<MpiAllReducer>(comm, o);
  std::unique_ptr<HostGroup> group;
  try {
    group = comm.host_group(o.numel, o.split_ranks_per_host);
  } catch (const CollectiveError& e) {
    // The MPI group refuses a window larger than /dev/shm on every rank: say for which flag.
    throw CollectiveError(
        fmt::format("--allreduce {}: {}", allreduce_algorithm_name(o.algorithm), e.what()),
        e.exit_code());
  }
  run_collectively(comm, [&] { check_placement(comm, *group, o.algorithm); });
  return std::make_unique<SharedAllReducer>(comm, o, std::move(group));
}

}  // namespace trainscope::comm
