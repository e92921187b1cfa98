// The element-wise kernels' vector code (kernels/simd.h) changes no loss:
// the same seeded run at every level this CPU runs and on the reference
// templates (the float kernels as they were before they had vector code),
// every step's loss within 1e-6 relative (issue 35's bound).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "kernels/simd.h"
#include "tests/tiny_training.h"
#include "training/trainer.h"

namespace trainscope::training {
namespace {

std::vector<double> losses_at(kernels::SimdLevel level, const options::TrainOptions& o) {
  const kernels::ScopedSimdLevel scope(level);
  auto comm = comm::make_communicator("local");
  const results::RunSummary s = run_training(o, *comm, stdout);
  EXPECT_EQ(s.status, results::RunStatus::kOk) << level.name();
  std::vector<double> out;
  for (const auto& r : s.steps.at(0)) out.push_back(r.loss);
  return out;
}

void expect_losses_follow_the_reference(const options::TrainOptions& o) {
  const std::vector<double> reference = losses_at(kernels::kReferenceLevel, o);
  ASSERT_EQ(static_cast<int64_t>(reference.size()), o.steps);
  for (const kernels::SimdLevel& level : kernels::simd_levels()) {
    const std::vector<double> got = losses_at(level, o);
    ASSERT_EQ(got.size(), reference.size()) << level.name();
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, std::abs(got[i] - reference[i]) / std::abs(reference[i]));
    }
    EXPECT_LE(worst, 1e-6) << level.name() << " against the reference kernels";
    ::testing::Test::RecordProperty("worst_relative_" + level.name(), fmt::format("{:.2e}", worst));
  }
}

// tiny: every kernel, clipping (the global norm) included, over 30 steps.
TEST(SimdLossTest, TinyLossesFollowTheReferenceKernels) {
  options::TrainOptions o = testing::tiny_training(30, 4, 32);
  o.grad_clip = 0.5;  // so that the norm's value matters to the weights
  expect_losses_follow_the_reference(o);
}

// small: seed's vocabulary of 50257 (the head's softmax over whole rows).
TEST(SimdLossTest, SmallLossesFollowTheReferenceKernels) {
  options::TrainOptions o = testing::tiny_training(4, 2, 64);
  o.model = "small";
  expect_losses_follow_the_reference(o);
}

}  // namespace
}  // namespace trainscope::training
