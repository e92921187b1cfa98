// Reduction strategies on the one-process communicator: how many collectives
// each makes and over which ranges (as MLX's test checks fused = 1 call).
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "comm/communicator.h"
#include "comm/grad_sync.h"

namespace trainscope::comm {
namespace {

std::vector<TensorRange> tensors_of(const std::vector<int64_t>& sizes) {
  std::vector<TensorRange> out;
  int64_t off = 0;
  for (int64_t n : sizes) {
    out.push_back({off, n});
    off += n;
  }
  return out;
}

TEST(GradSyncTest, PerTensorMakesOneCallPerTensor) {
  auto comm = make_communicator("local");
  std::vector<float> g(100);
  auto sync = make_grad_sync(ReduceStrategy::kPerTensor, *comm, g, tensors_of({10, 30, 60}), 0);
  sync->begin_step(0);
  sync->finish();
  EXPECT_EQ(sync->stats().calls, 3);
  EXPECT_EQ(sync->stats().bytes, 400);
}

TEST(GradSyncTest, FusedBucketsAreContiguousFromTheEnd) {
  auto comm = make_communicator("local");
  std::vector<float> g(100);
  // 160-byte buckets = 40 floats: [60,100), [20,60), [0,20).
  auto sync = make_grad_sync(ReduceStrategy::kFused, *comm, g, tensors_of({50, 50}), 160);
  const auto b = sync->buckets();
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].offset, 60);
  EXPECT_EQ(b[1].offset, 20);
  EXPECT_EQ(b[2].offset, 0);
  EXPECT_EQ(b[2].numel, 20);
  sync->begin_step(0);
  sync->finish();
  EXPECT_EQ(sync->stats().calls, 3);
  EXPECT_EQ(sync->stats().bytes, 400);
  auto whole = make_grad_sync(ReduceStrategy::kFused, *comm, g, tensors_of({50, 50}), 0);
  whole->begin_step(0);
  whole->finish();
  EXPECT_EQ(whole->stats().calls, 1);
}

TEST(GradSyncTest, OverlapLaunchesBucketsAsBackwardReachesThem) {
  auto comm = make_communicator("local");
  std::vector<float> g(100);
  auto sync = make_grad_sync(ReduceStrategy::kOverlap, *comm, g, tensors_of({100}), 160);
  sync->begin_step(0);
  sync->on_ready(70);  // [70, 100) final: no bucket complete yet (first is [60, 100))
  EXPECT_EQ(sync->stats().calls, 0);
  sync->on_ready(60);
  EXPECT_EQ(sync->stats().calls, 1);
  sync->on_ready(0);
  EXPECT_EQ(sync->stats().calls, 3);
  sync->finish();
  EXPECT_EQ(sync->stats().calls, 3);
  EXPECT_EQ(sync->stats().bytes, 400);
}

TEST(GradSyncTest, StrategyNamesRoundTripAndUnknownIsAnError) {
  for (auto s : {ReduceStrategy::kPerTensor, ReduceStrategy::kFused, ReduceStrategy::kOverlap}) {
    EXPECT_EQ(parse_reduce_strategy(reduce_strategy_name(s)), s);
  }
  EXPECT_THROW(parse_reduce_strategy("ring"), Error);
}

TEST(CommunicatorTest, LocalIsSizeOneAndCollectivesAreNoOps) {
  auto comm = make_communicator("local");
  EXPECT_EQ(comm->size(), 1);
  EXPECT_EQ(comm->rank(), 0);
  std::vector<float> x = {1, 2, 3};
  comm->all_reduce_sum(std::span<float>(x));
  EXPECT_EQ(x, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(comm->all_gather("a"), std::vector<std::string>{"a"});
  EXPECT_THROW(make_communicator("carrier-pigeon"), Error);
  EXPECT_THROW(run_collectively(*comm, [] { throw Error("boom"); }), CollectiveError);
}

}  // namespace
}  // namespace trainscope::comm
