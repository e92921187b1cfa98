// Runs under mpirun (-np 2 and -np 4): collectives, reduction strategies and
// the data-parallel equivalence of the trainer. Every rank runs every test in
// the same order; rank 0 also trains the naive reference with a one-process
// communicator.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <numeric>

#include "comm/communicator.h"
#include "comm/grad_sync.h"
#include "kernels/check.h"
#include "training/param_layout.h"
#include "training/safetensors.h"
#include "training/trainer.h"

namespace trainscope {
namespace {
namespace fs = std::filesystem;

comm::Communicator* g_comm = nullptr;

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

TEST(MpiTest, EveryStrategySumsTheGradients) {
  auto& c = *g_comm;
  const int n = c.size();
  for (auto strategy : {comm::ReduceStrategy::kPerTensor, comm::ReduceStrategy::kFused,
                        comm::ReduceStrategy::kOverlap, comm::ReduceStrategy::kOverlapPoll}) {
    std::vector<float> g(1000);
    for (int i = 0; i < 1000; ++i) g[i] = static_cast<float>(i * (c.rank() + 1));
    auto sync = comm::make_grad_sync(strategy, c, g, {{0, 300}, {300, 700}}, 1200);
    sync->begin_step(0);
    sync->on_ready(500);
    sync->on_ready(0);
    sync->finish();
    for (int i = 0; i < 1000; ++i) {
      ASSERT_EQ(g[i], static_cast<float>(i) * n * (n + 1) / 2) << comm::reduce_strategy_name(strategy);
    }
  }
}

TEST(MpiTest, SetupErrorsAreCollectiveAndNameTheCulprit) {
  auto& c = *g_comm;
  training::TrainOptions o;
  o.model = "tiny";
  o.steps = 1;
  o.quiet = true;
  o.threads = 1;
  o.data.source = "builtin:stories?docs=64&valid_docs=16";
  o.batch = 4 * c.size() + 1;  // not divisible
  o.data.data_mode = training::DataMode::kSharded;
  try {
    training::run_training(o, c);
    FAIL();
  } catch (const comm::CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("not divisible by the world size"), std::string::npos);
  }
  o.batch = 4 * c.size();
  o.data.data_mode = training::DataMode::kNaive;
  EXPECT_THROW(training::run_training(o, c), comm::CollectiveError);
  // Ranks that disagree on the configuration: the field and the rank are named.
  o.data.data_mode = training::DataMode::kDuplicated;
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

struct TrainRun {
  std::vector<double> losses;
  std::vector<float> params;
  results::RunSummary summary;
};

// Trains tiny for 10 steps and returns rank 0's view (losses, final parameters).
TrainRun train(comm::Communicator& c, training::DataMode mode, comm::ReduceStrategy reduce,
          const std::string& tag) {
  training::TrainOptions o;
  o.model = "tiny";
  o.batch = 8;
  o.block = 24;
  o.steps = 10;
  o.lr = 3e-3;
  o.threads = 1;
  o.quiet = true;
  o.data.source = "builtin:stories?docs=200&valid_docs=16";
  o.data.data_mode = mode;
  o.data.shard = training::ShardMode::kStrided;
  o.reduce = reduce;
  o.bucket_mb = 0.01;  // several buckets even on the tiny model
  const fs::path dir = fs::temp_directory_path() /
                       ("trainscope_mpi_test_" + tag + "_" + std::to_string(::getppid()));
  o.checkpoint_dir = dir.string();
  TrainRun r;
  r.summary = training::run_training(o, c);
  for (const auto& s : r.summary.steps.at(0)) r.losses.push_back(s.loss);
  if (c.rank() == 0) {
    const training::ParamLayout layout(training::model_preset("tiny"));
    r.params.resize(layout.total());
    training::load_safetensors(dir / "step-00000010" / "model.safetensors", layout, r.params);
    fs::remove_all(dir);
  }
  return r;
}

TEST(MpiTest, DataParallelModesFollowTheNaiveRun) {
  auto& c = *g_comm;
  auto local = comm::make_communicator("local");
  TrainRun naive;
  if (c.rank() == 0) naive = train(*local, training::DataMode::kNaive, comm::ReduceStrategy::kFused, "naive");
  for (auto mode : {training::DataMode::kDuplicated, training::DataMode::kSharded}) {
    for (auto reduce : {comm::ReduceStrategy::kPerTensor, comm::ReduceStrategy::kFused,
                        comm::ReduceStrategy::kOverlap, comm::ReduceStrategy::kOverlapPoll}) {
      const std::string what = std::string(training::to_string(mode)) + "/" +
                               std::string(comm::reduce_strategy_name(reduce));
      TrainRun dp = train(c, mode, reduce, what.substr(0, 3) + std::to_string(static_cast<int>(reduce)));
      // The trainer already checked that all ranks hold identical parameters.
      ASSERT_EQ(dp.summary.ranks.size(), static_cast<std::size_t>(c.size()));
      if (c.rank() != 0) continue;
      ASSERT_EQ(dp.losses.size(), naive.losses.size()) << what;
      for (std::size_t i = 0; i < dp.losses.size(); ++i) {
        EXPECT_NEAR(dp.losses[i], naive.losses[i], 1e-5 * std::abs(naive.losses[i]))
            << what << " step " << i;
      }
      double worst = 0;
      for (std::size_t i = 0; i < dp.params.size(); ++i) {
        worst = std::max(worst, static_cast<double>(std::abs(dp.params[i] - naive.params[i])));
      }
      EXPECT_LT(worst, 2e-5) << what << ": final parameters drift from the naive run";
      // Data held: duplicated ~ the whole dataset per rank, sharded ~ 1/N of
      // its tokens. (Bytes also count the per-example index every strided
      // rank keeps, which on this tiny corpus is a large part of the total.)
      const auto& whole = naive.summary.ranks[0].data;
      for (const auto& r : dp.summary.ranks) {
        const double tokens = static_cast<double>(r.data.tokens_held) / whole.tokens_held;
        const double bytes = static_cast<double>(r.data.bytes_held) / whole.bytes_held;
        if (mode == training::DataMode::kDuplicated) {
          EXPECT_NEAR(tokens, 1.0, 0.05) << what << " rank " << r.rank;
          EXPECT_NEAR(bytes, 1.0, 0.05) << what << " rank " << r.rank;
        } else {
          EXPECT_NEAR(tokens, 1.0 / c.size(), 0.2 / c.size()) << what << " rank " << r.rank;
          EXPECT_LT(bytes, 1.5 / c.size()) << what << " rank " << r.rank;
        }
        // Every rank read its host's load, the job's ranks known to it.
        EXPECT_GE(r.load_start.other_runnable, 0) << what << " rank " << r.rank;
        EXPECT_GE(r.load_end.cores, 1) << what << " rank " << r.rank;
      }
      if (reduce == comm::ReduceStrategy::kPerTensor) {
        const auto& s0 = dp.summary.steps[0][0];
        EXPECT_EQ(s0.comm_calls, static_cast<int64_t>(
                                     training::ParamLayout(training::model_preset("tiny"))
                                         .tensors()
                                         .size()));
      }
    }
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
  if (comm->rank() == 0 && failed > 0) std::fprintf(stderr, "%lld rank(s) failed\n", (long long)failed);
  return failed > 0 ? 1 : 0;
}
