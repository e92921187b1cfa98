// Time-dilated cases in reports (report/dilation.h): a case whose hosts ran
// at a CPU share F behind links of F x the rate is scaled back (times x F,
// the link's bandwidth / F) before it meets the prediction or the one-host
// case, marked "dilated x1/F", and checked against the same case on hosts of
// a whole core.
#include "report/dilation.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "report/answers.h"
#include "report/comparison.h"
#include "report/findings.h"
#include "report/suite_prediction.h"
#include "tests/suite_builder.h"

namespace trainscope::report {
namespace {

namespace fs = std::filesystem;
using testing::CaseSpec;
using testing::SuiteSpec;

class DilationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trainscope-dilation-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  analysis::SuiteData load_dilated(SuiteSpec spec, int repetitions = 1) {
    spec.step_noise = 0;  // exact figures
    spec.repetitions = repetitions;
    return testing::build_and_load_suite(dir_ / (spec.name + ".db"), spec);
  }

  fs::path dir_;
};

// One host computes 100 ms a step at batch 4; the gradient is 3 MB. Two real
// hosts over gige (1 Gbit/s, 50 us measured) take `real_s` a step; the same
// two hosts at a share of 0.5 behind half the rate, `dilated_s` (their clock
// time, about twice as long), with their link measured at half the rate and
// twice the latency.
SuiteSpec dilated_suite(double real_s, double dilated_s) {
  SuiteSpec s;
  s.name = "dilated";
  const CaseSpec one = testing::one_machine_spec("one-b4", 0.1, 4);
  const CaseSpec real = testing::two_hosts_gige_spec("h2-gige", real_s, 8, 4);
  CaseSpec dilated = real;
  dilated.name = "h2-f0.5-gige";
  dilated.step_time_s = dilated_s;
  dilated.link_gbps = 0.5;
  dilated.link_latency_us = 100;
  dilated.config = {{"cpu_share", 0.5}};
  s.cases = {one, real, dilated};
  return s;
}

TEST_F(DilationTest, ADilatedCaseIsScaledByItsShareBeforeItMeetsThePrediction) {
  const double predicted = 0.1 + 0.024 + 2 * 50e-6;  // compute + the 2-host all-reduce
  // Dilated by 2 and 20% slower than the model even after scaling.
  const analysis::SuiteData suite = load_dilated(dilated_suite(predicted, 2 * predicted * 1.2), 3);
  EXPECT_DOUBLE_EQ(dilation_share(suite.cases[2].run_case), 0.5);
  EXPECT_DOUBLE_EQ(dilation_share(suite.cases[1].run_case), 1);
  EXPECT_EQ(dilation_label(0.25), "dilated x4");
  EXPECT_EQ(dilation_label(1), "");

  const auto p = suite_prediction(suite);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->validation.size(), 2u);
  const ValidationRow& d = p->validation[1];
  EXPECT_EQ(d.case_name, "h2-f0.5-gige");
  EXPECT_DOUBLE_EQ(d.cpu_share, 0.5);
  // The link scaled back to 1 Gbit/s and 50 us: the prediction of the real case.
  EXPECT_NEAR(d.predicted_step_s, predicted, 1e-9);
  EXPECT_NEAR(d.measured_step_s, predicted * 1.2, 1e-9);
  EXPECT_NEAR(d.error(), 1 / 1.2 - 1, 1e-9);
  EXPECT_EQ(d.repetitions, 3);
  EXPECT_NEAR(d.measured_min_s, predicted * 1.2, 1e-9);  // no noise: no spread
  EXPECT_NEAR(d.measured_speedup, p->validation[0].measured_speedup / 1.2, 1e-9);

  const std::string md = answers_markdown(suite);
  EXPECT_NE(md.find("2 (dilated x2)"), std::string::npos) << md;
  EXPECT_NE(md.find("3 reps"), std::string::npos) << md;  // the spread of the repetitions
}

TEST_F(DilationTest, TheEmulationCheckSaysByHowMuchADilatedCaseDiffersAndWhere) {
  const double real = 0.124;
  const auto within = dilation_checks(load_dilated(dilated_suite(real, 2 * real * 1.05)));
  ASSERT_EQ(within.size(), 1u);
  EXPECT_EQ(within[0].dilated_case, "h2-f0.5-gige");
  EXPECT_EQ(within[0].real_case, "h2-gige");
  EXPECT_NEAR(within[0].difference(), 0.05, 1e-9);
  EXPECT_EQ(dilation_table(load_dilated(dilated_suite(real, 2 * real * 1.05))).rows[0].back(),
            "within 10%");

  // 30% slower after scaling, all of it compute (the builder's phases follow
  // the step): the verdict names compute and what is not dilated.
  const Table t = dilation_table(load_dilated(dilated_suite(real, 2 * real * 1.3)));
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0][5], "+30.0%");
  EXPECT_NE(t.rows[0].back().find("memory bandwidth"), std::string::npos) << t.rows[0].back();
  // A suite without dilated cases has no check.
  SuiteSpec plain = dilated_suite(real, real);
  plain.cases.pop_back();
  EXPECT_TRUE(dilation_checks(load_dilated(plain)).empty());
}

// One host under a quota, no cluster (a one-host case with cpu_share): the
// check sets it beside the same case at full speed, so compute's own
// dilation is measured apart from MPI and the links; and it is never the
// one-machine case a cluster's case is measured against, even listed first.
TEST_F(DilationTest, AOneHostCaseUnderAQuotaIsCheckedAgainstTheOneAtFullSpeed) {
  SuiteSpec s = dilated_suite(0.124, 0.124 * 2);
  CaseSpec quota = s.cases[0];
  quota.name = "one-b4-f0.5";
  quota.step_time_s = 0.1 * 2 * 1.6;  // computes as at 0.3125 of a core, not 0.5
  quota.config = {{"cpu_share", 0.5}};
  s.cases.insert(s.cases.begin(), quota);
  const analysis::SuiteData suite = load_dilated(s);
  const auto checks = dilation_checks(suite);
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].dilated_case, "one-b4-f0.5");
  EXPECT_EQ(checks[0].real_case, "one-b4");
  EXPECT_NEAR(checks[0].difference(), 0.6, 1e-9);
  EXPECT_TRUE(checks[0].alone);
  EXPECT_FALSE(checks[1].alone);
  EXPECT_NE(dilation_table(suite).rows[0].back().find(
                "compute +60.0% after scaling, one host alone under the quota"),
            std::string::npos)
      << dilation_table(suite).rows[0].back();
  EXPECT_NE(dilation_table(suite).rows[0].back().find("reads slow by about this much"),
            std::string::npos);
  // Above F (a quota that gives more than its share) the cases read fast.
  SuiteSpec fast_spec = s;
  fast_spec.cases[0].step_time_s = 0.1 * 2 * 0.7;
  const std::string fast = dilation_table(load_dilated(fast_spec)).rows[0].back();
  EXPECT_NE(fast.find("compute -30.0% after scaling"), std::string::npos) << fast;
  EXPECT_NE(fast.find("reads fast by about this much"), std::string::npos) << fast;
  const analysis::CaseData* one = one_machine_case(suite, *suite.find_case("h2-gige"));
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->name, "one-b4") << "a dilated one-host case is not a full-speed machine";
  const auto prediction = suite_prediction(suite);
  ASSERT_TRUE(prediction);
  EXPECT_EQ(prediction->compute_case, "one-b4");
  EXPECT_EQ(compare_cases(suite).baseline_case, "one-b4");
}

TEST_F(DilationTest, MachineRowsOfADilatedCaseAreInUndilatedTime) {
  const double real = 0.124;
  const auto rows = machine_rows(load_dilated(dilated_suite(real, 2 * real)));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_DOUBLE_EQ(rows[2].cpu_share, 0.5);
  EXPECT_NEAR(rows[2].tokens_per_s, rows[1].tokens_per_s, rows[1].tokens_per_s * 1e-9);
  EXPECT_NEAR(rows[2].link_gbps, 1.0, 1e-9);
  EXPECT_NEAR(rows[2].time_saved, rows[1].time_saved, 1e-9);
}

}  // namespace
}  // namespace trainscope::report
