// check calibrate's arithmetic on synthetic runs whose noise is known: the
// A/A pairs, each case's noise, the repetitions a threshold needs, and the
// pooled baseline that carries them.
#include "check/calibration.h"

#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/check.h"
#include "check/baseline.h"
#include "tests/suite_builder.h"
#include "tests/temp_dir.h"

namespace trainscope::check {
namespace {

namespace fs = std::filesystem;

std::vector<CheckSuite> synthetic_runs(const fs::path& dir, int runs, double run_noise,
                                       int repetitions) {
  std::vector<CheckSuite> out;
  for (int k = 0; k < runs; ++k) {
    auto spec = testing::reductions_suite();
    spec.seed = static_cast<unsigned>(10 + k);
    spec.run_noise = run_noise;
    spec.repetitions = repetitions;
    const fs::path db = dir / fmt::format("run{}.db", k);
    testing::build_suite_db(db, spec);
    out.push_back(load_check_suite(db, "latest"));
  }
  return out;
}

class CalibrationTest : public ::testing::Test {
 protected:
  trainscope::testing::TempDir scratch_{"calibration-test"};
  const fs::path dir_ = scratch_.path();
};

TEST_F(CalibrationTest, QuietRunsPassEveryPairAndNeedFewRepetitions) {
  const auto runs = synthetic_runs(dir_, 4, 0.01, 8);
  CheckOptions o;
  o.threshold_pct = 10;
  const Calibration cal = calibrate_gate(runs, o);
  EXPECT_EQ(cal.pairs, 6);
  EXPECT_EQ(cal.false_alarm_pairs, 0) << calibration_text(cal);
  EXPECT_EQ(cal.repetitions_per_run, 8);
  ASSERT_FALSE(cal.cases.empty());
  for (const CaseNoise& c : cal.cases) {
    EXPECT_EQ(c.repetitions, 32) << c.case_name;
    // 1% per run plus the median of 19 steps at 3%: about 1.2%.
    EXPECT_GT(c.noise, 0.005) << c.case_name;
    EXPECT_LT(c.noise, 0.025) << c.case_name;
    EXPECT_LT(c.detectable, 0.10) << c.case_name;
    EXPECT_LE(c.repetitions_needed, 8) << c.case_name;
  }
  const CheckSuite pooled = pooled_baseline(runs, cal);
  EXPECT_EQ(pooled.cases.front().timings.step_time_median_s.size(), 32u);
  EXPECT_EQ(pooled.threshold_pct, 10.0);
  EXPECT_EQ(pooled.repetitions, cal.repetitions_needed);
  EXPECT_EQ(pooled.calibration.at("pairs"), 6);
  // It round-trips as a baseline file.
  save_baseline(pooled, dir_ / "pooled.json");
  EXPECT_EQ(load_baseline(dir_ / "pooled.json").repetitions, cal.repetitions_needed);
}

TEST_F(CalibrationTest, NoisyRunsNeedMoreRepetitionsThanTheyHave) {
  const auto runs = synthetic_runs(dir_, 3, 0.15, 4);
  CheckOptions o;
  o.threshold_pct = 5;
  const Calibration cal = calibrate_gate(runs, o);
  EXPECT_GT(cal.repetitions_needed, 4) << calibration_text(cal);
  EXPECT_EQ(cal.inconclusive_pairs, 3) << calibration_text(cal);
  const std::string text = calibration_text(cal);
  EXPECT_NE(text.find(fmt::format("needs {} repetitions a side", cal.repetitions_needed)),
            std::string::npos)
      << text;
  EXPECT_THROW(calibrate_gate({runs.front()}, o), Error);
}

}  // namespace
}  // namespace trainscope::check
