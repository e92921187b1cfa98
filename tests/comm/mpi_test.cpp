// Runs under mpirun (-np 2 and -np 4): collectives, reduction strategies and
// the data-parallel equivalence of the trainer. Every rank runs every test in
// the same order; rank 0 also trains the naive reference with a one-process
// communicator.
#include <gtest/gtest.h>

#include <functional>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <numeric>

#include "comm/all_reducer.h"
#include "comm/communicator.h"
#include "comm/grad_sync.h"
#include "base/check.h"
#include "kernels/float16.h"
#include "training/adapters.h"
#include "training/param_layout.h"
#include "training/safetensors.h"
#include "training/trainer.h"
#include "tests/comm/mpi_world.h"
#include "tests/tiny_training.h"

namespace trainscope {

comm::Communicator* g_comm = nullptr;

namespace {
namespace fs = std::filesystem;

TEST(MpiTest, CollectivesSumGatherAndBroadcast) {
  auto& c = *g_comm;
  const int n = c.size();
  ASSERT_GE(n, 2);
  std::vector<float> x(1000, static_cast<float>(c.rank() + 1));
  c.all_reduce_sum(std::span<float>(x));
  for (float v : x) ASSERT_EQ(v, n * (n + 1) / 2.0f);
  std::vector<float> y(4096, 1.0f);
  auto req = c.all_reduce_sum_async(y);
  req->wait();
  EXPECT_EQ(y[4095], static_cast<float>(n));
  const auto all = c.all_gather("rank" + std::to_string(c.rank()));
  ASSERT_EQ(static_cast<int>(all.size()), n);
  EXPECT_EQ(all[n - 1], "rank" + std::to_string(n - 1));
  std::string s = c.rank() == 0 ? "from rank 0" : "";
  c.broadcast_string(&s, 0);
  EXPECT_EQ(s, "from rank 0");
}

// Records of every size along the ring: empty, and past Open MPI's eager
// limit (64 KiB over TCP, so sent by rendezvous), each rank's at its place.
TEST(MpiTest, AllGatherPassesRecordsOfAnySizeAlongTheRing) {
  auto& c = *g_comm;
  const int n = c.size();
  auto record = [](int rank) {
    return rank % 2 == 1 ? std::string() : std::string(200000 + 977 * rank, 'a' + rank % 26);
  };
  const auto all = c.all_gather(record(c.rank()));
  ASSERT_EQ(static_cast<int>(all.size()), n);
  for (int r = 0; r < n; ++r) EXPECT_EQ(all[r], record(r)) << "rank " << r;
}

TEST(MpiTest, ReduceScatterAndAllGatherWorkOnUnevenSlices) {
  auto& c = *g_comm;
  const int n = c.size();
  const int64_t count = 1001;  // not a multiple of the rank count
  std::vector<float> x(count);
  for (int64_t i = 0; i < count; ++i) x[i] = static_cast<float>((c.rank() + 1) * (i % 13));
  c.reduce_scatter_sum(std::span<float>(x));
  const comm::Slice mine = comm::slice_of(count, n, c.rank());
  for (int64_t i = mine.offset; i < mine.offset + mine.numel; ++i) {
    ASSERT_EQ(x[i], static_cast<float>(n * (n + 1) / 2 * (i % 13))) << "element " << i;
  }
  std::vector<float> y(count, -1.0f);
  for (int64_t i = mine.offset; i < mine.offset + mine.numel; ++i) y[i] = static_cast<float>(i);
  c.all_gather(std::span<float>(y));
  for (int64_t i = 0; i < count; ++i) ASSERT_EQ(y[i], static_cast<float>(i)) << "element " << i;
}

// Ranks per "host" for the hierarchical algorithm's tests: two groups when
// the job has 4 ranks, one rank each when it has 2, so the cross-host step runs.

// Calls check(reducer, sync, what) for every algorithm x strategy over a
// 1000-float gradient of two tensors in `dtype`, after `fill` wrote it
// and the strategy reduced it (one step; `steps` steps each).
void for_every_algorithm_and_strategy(
    options::CommDtype dtype, int steps,
    const std::function<void(std::span<float>, int step)>& fill,
    const std::function<void(std::span<const float>, int step, const comm::GradSync&,
                             const std::string& what)>& check) {
  auto& c = *g_comm;
  for (auto algorithm : {options::AllReduceAlgorithm::kMpi, options::AllReduceAlgorithm::kShm,
                         options::AllReduceAlgorithm::kHier}) {
    const int split =
        algorithm == options::AllReduceAlgorithm::kHier ? split_for_hier(c.size()) : 0;
    auto reducer = comm::make_all_reducer(
        c, {.algorithm = algorithm, .dtype = dtype, .numel = 1000, .split_ranks_per_host = split});
    for (auto strategy :
         {options::ReduceStrategy::kPerTensor, options::ReduceStrategy::kFused,
          options::ReduceStrategy::kOverlap, options::ReduceStrategy::kOverlapPoll}) {
      const std::string what =
          std::string(enum_name(algorithm)) + "/" + std::string(enum_name(strategy));
      std::span<float> g = reducer->buffer();
      ASSERT_EQ(g.size(), 1000u);
      for (int step = 0; step < steps; ++step) {
        fill(g, step);
        auto sync = comm::make_grad_sync(strategy, *reducer, {{0, 300}, {300, 700}}, 1204);
        sync->begin_step(step);
        sync->on_ready(500);
        sync->on_ready(0);
        sync->finish();
        check(g, step, *sync, what);
      }
    }
  }
}

TEST(MpiTest, EveryAlgorithmAndStrategySumsTheGradients) {
  auto& c = *g_comm;
  const int n = c.size();
  for_every_algorithm_and_strategy(
      options::CommDtype::kFp32, 2,
      [&](std::span<float> g, int step) {
        for (int i = 0; i < 1000; ++i) g[i] = static_cast<float>(i * (c.rank() + 1 + step));
      },
      [&](std::span<const float> g, int step, const comm::GradSync&, const std::string& what) {
        for (int i = 0; i < 1000; ++i) {
          ASSERT_EQ(g[i], static_cast<float>(i) * (n * (n + 1) / 2 + n * step))
              << what << " element " << i << " step " << step;
        }
      });
}

TEST(MpiTest, SharedReduceScatterLeavesEachRankItsSlice) {
  auto& c = *g_comm;
  const int n = c.size();
  auto reducer =
      comm::make_all_reducer(c, {.algorithm = options::AllReduceAlgorithm::kShm, .numel = 777});
  std::span<float> g = reducer->buffer();
  for (int i = 0; i < 777; ++i) g[i] = static_cast<float>((c.rank() + 1) * (i % 5));
  reducer->reduce_scatter(7, 770);
  const comm::Slice mine = comm::slice_of(770, n, c.rank());
  for (int64_t i = 7 + mine.offset; i < 7 + mine.offset + mine.numel; ++i) {
    ASSERT_EQ(g[i], static_cast<float>(n * (n + 1) / 2 * (i % 5))) << "element " << i;
  }
}

// Rank r's element i in the bf16 tests: signed, of several magnitudes, and
// mostly not representable in bf16; every rank can compute every rank's.
float bf16_input(int r, int64_t i) {
  return std::sin(0.37f * static_cast<float>(i) + static_cast<float>(r)) *
             (1.0f + 0.1f * static_cast<float>(r)) * std::ldexp(1.0f, static_cast<int>(i % 7) - 3) +
         0x1p-14f;
}

// Whether `got` is a bf16 sum over n ranks of element i: within 2^-8 per
// addition (the n inputs' roundings and the n - 1 sums) of the exact sum,
// relative to the sum of magnitudes; and with 2 ranks exactly the fp32 sum
// of the two rounded inputs, rounded once.
::testing::AssertionResult is_bf16_sum(float got, int n, int64_t i) {
  double exact = 0, magnitude = 0;
  for (int r = 0; r < n; ++r) {
    exact += bf16_input(r, i);
    magnitude += std::abs(bf16_input(r, i));
  }
  if (std::abs(got - exact) > n * 0x1p-8 * magnitude) {
    return ::testing::AssertionFailure() << "element " << i << ": " << got << " vs exact " << exact;
  }
  if (n == 2) {
    auto round = [](float x) { return kernels::bf16_to_float(kernels::float_to_bf16(x)); };
    const float once = round(round(bf16_input(0, i)) + round(bf16_input(1, i)));
    if (got != once) {
      return ::testing::AssertionFailure() << "element " << i << ": " << got << " vs " << once;
    }
  }
  return ::testing::AssertionSuccess();
}

// Whether every rank holds the same bits in `g` (its max and min over ranks agree).
bool same_on_every_rank(comm::Communicator& c, std::span<const float> g) {
  double sum = 0;
  for (std::size_t i = 0; i < g.size(); ++i) sum += static_cast<double>(g[i]) * (i + 1);
  std::vector<double> extremes = {sum, -sum};
  c.all_reduce_max(std::span<double>(extremes));
  return extremes[0] == sum && -extremes[1] == sum;
}

TEST(MpiTest, Bf16AllReduceIsTheFp32SumWithinBf16Precision) {
  auto& c = *g_comm;
  for_every_algorithm_and_strategy(
      options::CommDtype::kBf16, 1,
      [&](std::span<float> g, int) {
        for (int i = 0; i < 1000; ++i) g[i] = bf16_input(c.rank(), i);
      },
      [&](std::span<const float> g, int, const comm::GradSync& sync, const std::string& what) {
        for (int i = 0; i < 1000; ++i) ASSERT_TRUE(is_bf16_sum(g[i], c.size(), i)) << what;
        EXPECT_EQ(sync.stats().bytes, 1000 * 2) << what;
        EXPECT_TRUE(same_on_every_rank(c, g)) << what;
      });
}

// ZeRO-1's reduce-scatter in bf16: each rank's slice, as the all-reduce's.
TEST(MpiTest, Bf16ReduceScatterLeavesEachRankItsSliceWithinBf16Precision) {
  auto& c = *g_comm;
  for (auto algorithm : {options::AllReduceAlgorithm::kMpi, options::AllReduceAlgorithm::kShm}) {
    auto reducer = comm::make_all_reducer(
        c, {.algorithm = algorithm, .dtype = options::CommDtype::kBf16, .numel = 777});
    std::span<float> g = reducer->buffer();
    for (int i = 0; i < 777; ++i) g[i] = bf16_input(c.rank(), i);
    reducer->reduce_scatter(7, 770);
    const comm::Slice mine = comm::slice_of(770, c.size(), c.rank());
    for (int64_t i = 7 + mine.offset; i < 7 + mine.offset + mine.numel; ++i) {
      ASSERT_TRUE(is_bf16_sum(g[i], c.size(), i)) << enum_name(algorithm);
    }
  }
}

TEST(MpiTest, SharedMemoryAcrossHostsIsAClearErrorNotAWrongSum) {
  auto& c = *g_comm;
  // One rank per pretended host: shm cannot reach the others.
  try {
    comm::make_all_reducer(
        c,
        {.algorithm = options::AllReduceAlgorithm::kShm, .numel = 10, .split_ranks_per_host = 1});
    FAIL() << "shm over several hosts was accepted";
  } catch (const comm::CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("use --allreduce hier"), std::string::npos) << e.what();
  }
  if (c.size() < 3) return;
  // Hosts of 3 and 1 ranks: hier needs them even.
  try {
    comm::make_all_reducer(
        c,
        {.algorithm = options::AllReduceAlgorithm::kHier, .numel = 10, .split_ranks_per_host = 3});
    FAIL() << "uneven hosts were accepted";
  } catch (const comm::CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("same number of ranks on every host"), std::string::npos)
        << e.what();
  }
}

TEST(MpiTest, SetupErrorsAreCollectiveAndNameTheCulprit) {
  auto& c = *g_comm;
  options::TrainOptions o;
  o.model = "tiny";
  o.steps = 1;
  o.quiet = true;
  o.threads = 1;
  o.data.source = "builtin:stories?docs=64&valid_docs=16";
  o.batch = 4 * c.size() + 1;  // not divisible
  o.data.data_mode = options::DataMode::kSharded;
  try {
    training::run_training(o, c);
    FAIL();
  } catch (const comm::CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("not divisible by the world size"), std::string::npos);
  }
  o.batch = 4 * c.size();
  o.data.data_mode = options::DataMode::kNaive;
  EXPECT_THROW(training::run_training(o, c), comm::CollectiveError);
  // Ranks that disagree on the configuration: the field and the rank are named.
  o.data.data_mode = options::DataMode::kDuplicated;
  if (c.rank() == c.size() - 1) o.lr = 1e-3;
  try {
    training::run_training(o, c);
    FAIL();
  } catch (const comm::CollectiveError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("/lr"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank " + std::to_string(c.size() - 1)), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace trainscope

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto comm = trainscope::comm::make_communicator("mpi");
  trainscope::g_comm = comm.get();
  // Only rank 0 prints test progress; failures on any rank still fail the job.
  if (comm->rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int rc = RUN_ALL_TESTS();
  int64_t failed = rc != 0 ? 1 : 0;
  failed = comm->all_reduce_sum(failed);
  if (comm->rank() == 0 && failed > 0)
    std::fprintf(stderr, "%lld rank(s) failed\n", (long long)failed);
  return failed > 0 ? 1 : 0;
}
