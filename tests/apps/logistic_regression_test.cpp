// The walkthrough's logistic regression on OR: its loss falls as the
// walkthrough's did (0.6931 at epoch 0, 0.0987 at epoch 900) and it ends
// with every prediction right.
#include "apps/logistic_regression.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

namespace trainscope::apps {
namespace {

TEST(LogisticRegressionTest, LossFallsAsInTheWalkthrough) {
  const LogisticRun run = train_logistic_or(1000, 0.1f);
  ASSERT_EQ(run.losses.size(), 1000u);
  EXPECT_NEAR(run.losses[0], std::log(2.0f), 1e-6);  // w = 0, b = 0: p = 0.5 everywhere
  // The walkthrough's printed losses (MLX, float32), to float's rounding.
  EXPECT_NEAR(run.losses[100], 0.342264860868454, 1e-5);
  EXPECT_NEAR(run.losses[500], 0.1567975878715515, 1e-5);
  EXPECT_NEAR(run.losses[900], 0.0986524447798729, 1e-5);
  EXPECT_LT(run.losses[900], 0.1);
  for (std::size_t i = 1; i < run.losses.size(); ++i) ASSERT_LT(run.losses[i], run.losses[i - 1]);
  EXPECT_EQ(run.predictions, (std::array<bool, 4>{false, true, true, true}));
  EXPECT_EQ(run.accuracy, 1.0f);
}

TEST(LogisticRegressionTest, PrintsEveryHundredEpochsLikeTheWalkthrough) {
  char* text = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&text, &size);
  train_logistic_or(1000, 0.1f, 100, out);
  std::fclose(out);
  const std::string s(text, size);
  std::free(text);
  EXPECT_NE(s.find("Epoch    0 | Loss: 0.693147"), std::string::npos) << s;
  EXPECT_NE(s.find("Epoch  900 | Loss: 0.09"), std::string::npos) << s;
  EXPECT_EQ(s.find("Epoch 1000"), std::string::npos) << s;
  EXPECT_NE(s.find("Accuracy: 100.00%"), std::string::npos) << s;
}

}  // namespace
}  // namespace trainscope::apps
