// The report's answers: findings from the cases that answer each question,
// the machines table with time saved, the prediction checked against hand
// computed figures, and Amdahl's law only where compute grows with the ranks.
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "report/answers.h"
#include "report/charts.h"
#include "report/comparison.h"
#include "report/findings.h"
#include "report/report.h"
#include "report/suite_prediction.h"
#include "tests/suite_builder.h"

namespace trainscope::report {
namespace {

namespace fs = std::filesystem;
using testing::CaseSpec;
using testing::SuiteSpec;

class AnswersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trainscope-answers-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  analysis::SuiteData load(SuiteSpec spec) {
    spec.step_noise = 0;  // exact figures
    spec.repetitions = 1;
    return testing::build_and_load_suite(dir_ / (spec.name + ".db"), spec);
  }

  static const Finding* find(const std::vector<Finding>& findings, const std::string& id) {
    for (const auto& f : findings) {
      if (f.id == id) return &f;
    }
    return nullptr;
  }

  fs::path dir_;
};

SuiteSpec questions_suite() {
  SuiteSpec s;
  s.name = "questions";
  s.cases = {
      {.name = "naive",
       .mode = "naive",
       .reduction = "none",
       .world_size = 1,
       .step_time_s = 0.1,
       .comm_share = 0},
      {.name = "duplicated", .mode = "duplicated", .step_time_s = 0.05, .comm_share = 0.2},
      {.name = "sharded",
       .mode = "sharded",
       .step_time_s = 0.05,
       .comm_share = 0.2,
       .loss_offset = 0.002},
      {.name = "sharded-per-tensor",
       .mode = "sharded",
       .reduction = "per-tensor",
       .step_time_s = 0.06,
       .comm_share = 0.35},
      {.name = "tcp-1", .mode = "sharded", .links = "1", .step_time_s = 0.05, .comm_share = 0.2},
      {.name = "tcp-4", .mode = "sharded", .links = "4", .step_time_s = 0.05, .comm_share = 0.19},
  };
  return s;
}

TEST_F(AnswersTest, EachQuestionIsAnsweredWithTheFiguresOfItsCases) {
  const auto findings = suite_findings(load(questions_suite()));
  const Finding* data = find(findings, "data");
  ASSERT_TRUE(data);
  // Sharded ranks hold 1/2 of the 8 MB dataset, duplicated ones all of it.
  EXPECT_NE(data->answer.find("a duplicated rank holds 7.6 MiB"), std::string::npos)
      << data->answer;
  EXPECT_NE(data->answer.find("a sharded rank 3.8 MiB: 2.0x less per rank"), std::string::npos)
      << data->answer;
  const Finding* loss = find(findings, "loss");
  ASSERT_TRUE(loss);
  EXPECT_NE(loss->answer.find("largest difference from one process's loss is 0.002"),
            std::string::npos)
      << loss->answer;
  EXPECT_NE(loss->answer.find("in sharded at step"), std::string::npos) << loss->answer;
  const Finding* reduction = find(findings, "reduction");
  ASSERT_TRUE(reduction);
  // 20 calls in 0.35 x 60 ms against 2 calls in 0.2 x 50 ms: 11 ms / 18 calls.
  EXPECT_NE(reduction->answer.find("per-tensor makes 20 calls a step"), std::string::npos)
      << reduction->answer;
  EXPECT_NE(reduction->answer.find("in 21.00 ms exposed, fused 2 in 10.00 ms, a change of -52% "
                                   "(one repetition: no interval), 611 us per call"),
            std::string::npos)
      << reduction->answer;
  const Finding* links = find(findings, "links");
  ASSERT_TRUE(links);
  EXPECT_NE(links->answer.find("On TCP over loopback on one machine, 4 links give 9.50 ms of "
                               "all-reduce a step, 1 link(s) 10.00 ms"),
            std::string::npos)
      << links->answer;
  EXPECT_NE(links->answer.find("no measurable change (+5%)"), std::string::npos) << links->answer;
  EXPECT_FALSE(find(findings, "machines"));  // nothing ran on several hosts
}

TEST_F(AnswersTest, ASuiteWithoutTheCasesForAQuestionHasNoFindingForIt) {
  SuiteSpec s;
  s.name = "alone";
  s.cases = {{.name = "naive", .mode = "naive", .world_size = 1, .comm_share = 0}};
  EXPECT_TRUE(suite_findings(load(s)).empty());
  // A large difference in loss is not put down to summation order.
  s.cases.push_back({.name = "sharded", .mode = "sharded", .loss_offset = 0.5});
  const auto findings = suite_findings(load(s));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].answer.find("more than summation order"), std::string::npos);
}

// One machine computes 100 ms a step at batch 4 and 200 ms at batch 8; the
// gradient is 3 MB; gige measured at 1 Gbit/s: a 2-host ring all-reduce
// moves 2 x 1/2 x 3 MB at 125 MB/s = 24 ms (+ 2 x latency).
SuiteSpec machines_suite(double weak_step_s, double strong_step_s) {
  SuiteSpec s;
  s.name = "machines";
  s.cases = {testing::one_machine_spec("one-b4", 0.1, 4),
             testing::one_machine_spec("one-b8", 0.2, 8),
             testing::two_hosts_gige_spec("h2-gige-weak", weak_step_s, 8, 4),
             testing::two_hosts_gige_spec("h2-gige-strong", strong_step_s, 8)};
  return s;
}

TEST_F(AnswersTest, PredictionsOfMultiHostCasesComeFromTheirOneMachineCaseAndTheirLink) {
  const double weak = 0.1 + 0.024 + 2 * 50e-6;        // compute + all-reduce
  const double strong = 0.2 / 2 + 0.024 + 2 * 50e-6;  // half the global batch each
  const analysis::SuiteData suite = load(machines_suite(weak * 1.1, strong));
  auto p = suite_prediction(suite);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->compute_case, "one-b4");
  EXPECT_NEAR(p->step.compute_s(), 0.1, 1e-9);
  EXPECT_DOUBLE_EQ(p->step.grad_bytes, 3e6);
  EXPECT_TRUE(p->latency_note.empty());
  ASSERT_FALSE(p->links.empty());
  EXPECT_EQ(p->links[0].model.name, "gige");
  EXPECT_TRUE(p->links[0].measured);
  // The N-host link is the one the real cases' all-reduces saw (their bus
  // bandwidth, 3 MB in a fifth of h2-gige-weak's step); each validation row
  // below predicts from its own probe's 1 Gbit/s and 50 us.
  EXPECT_NEAR(p->links[0].model.bandwidth_Bps, 3e6 / (0.2 * weak * 1.1), 1e3);
  EXPECT_NE(p->links[0].source.find("all-reduces of h2-gige-weak"), std::string::npos);
  // The unmeasured profiles follow with the measured latency.
  ASSERT_GE(p->links.size(), 2u);
  EXPECT_FALSE(p->links[1].measured);
  EXPECT_DOUBLE_EQ(p->links[1].model.latency_s, 50e-6);
  ASSERT_EQ(p->validation.size(), 2u);
  const ValidationRow& w = p->validation[0];
  EXPECT_EQ(w.case_name, "h2-gige-weak");
  EXPECT_EQ(w.scaling, analysis::Scaling::kWeak);
  EXPECT_NEAR(w.predicted_step_s, weak, 1e-9);
  EXPECT_NEAR(w.error(), 1 / 1.1 - 1, 1e-9);
  const ValidationRow& s = p->validation[1];
  EXPECT_EQ(s.scaling, analysis::Scaling::kStrong);
  EXPECT_NEAR(s.predicted_step_s, strong, 1e-9);
  EXPECT_NEAR(s.error(), 0, 1e-9);
  EXPECT_NEAR(s.measured_speedup, s.predicted_speedup, 1e-9);
}

// A larger batch runs its GEMMs more efficiently: one machine takes 160 ms
// at batch 8, not twice the 100 ms of batch 4. Strong scaling over 2 hosts
// gives each rank batch 4, so its prediction starts from the batch-4 case,
// not from half of the batch-8 one.
TEST_F(AnswersTest, StrongScalingStartsFromTheOneMachineCaseAtThePerRankBatch) {
  SuiteSpec spec = machines_suite(0.124, 0.124);
  spec.cases[1].step_time_s = 0.16;
  const auto p = suite_prediction(load(spec));
  ASSERT_TRUE(p);
  ASSERT_EQ(p->validation.size(), 2u);
  const ValidationRow& strong = p->validation[1];
  EXPECT_EQ(strong.scaling, analysis::Scaling::kStrong);
  EXPECT_EQ(strong.compute_from, "one-b4");
  EXPECT_NEAR(strong.predicted_step_s, 0.1 + 0.024 + 2 * 50e-6, 1e-9);
  EXPECT_EQ(p->validation[0].compute_from, "one-b4");  // weak: its own batch per rank
}

// The caveat about overlap on one-core hosts is printed where it applies:
// an overlap case on hosts of one core.
TEST_F(AnswersTest, TheOverlapCaveatOnlyWhereHostsHaveOneCore) {
  const std::string caveat = "On a host with one core, overlap's reduction thread";
  SuiteSpec spec = machines_suite(0.124, 0.124);
  EXPECT_EQ(answers_markdown(load(spec)).find(caveat), std::string::npos);  // fused only
  spec.cases[2].reduction = "overlap";
  EXPECT_NE(answers_markdown(load(spec)).find(caveat), std::string::npos);
  for (auto& c : spec.cases) c.cores_per_host = c.cores_per_host > 0 ? 4 : 0;
  EXPECT_EQ(answers_markdown(load(spec)).find(caveat), std::string::npos);
}

TEST_F(AnswersTest, TimeSavedIsAgainstTheOneMachineCaseOfTheSameBatch) {
  EXPECT_NEAR(time_saved(1 / 4259.0, 1 / 2611.0), 0.387, 5e-4);  // the walkthrough's
  const double weak = 0.124, strong = 0.124;
  const auto rows = machine_rows(load(machines_suite(weak, strong)));
  ASSERT_EQ(rows.size(), 4u);
  // Weak: 2 x 128 tokens in 124 ms against 128 in 100 ms.
  EXPECT_EQ(rows[2].baseline, "one-b4");
  EXPECT_EQ(rows[2].scaling, "weak");
  EXPECT_NEAR(rows[2].time_saved, 1 - (128 / 0.1) / (256 / weak), 1e-9);
  // Strong: 256 tokens a step in 124 ms against 256 in 200 ms.
  EXPECT_EQ(rows[3].baseline, "one-b8");
  EXPECT_EQ(rows[3].scaling, "strong");
  EXPECT_NEAR(rows[3].time_saved, 1 - strong / 0.2, 1e-9);
  EXPECT_NEAR(rows[3].wall_s, 20 * strong, 1e-9);
  EXPECT_NEAR(rows[3].link_gbps, 1.0, 1e-12);
  const auto findings = suite_findings(load(machines_suite(weak, strong)));
  ASSERT_TRUE(find(findings, "machines"));
  EXPECT_NE(find(findings, "machines")->answer.find("gige (measured 1.00 Gbit/s): 2 hosts"),
            std::string::npos);
  // The measured figure (1 - 1280 / 2064.5 tokens/s), beside the walkthrough's.
  EXPECT_NE(find(findings, "machines")->answer.find("2 hosts fused weak save 38.0%"),
            std::string::npos)
      << find(findings, "machines")->answer;
  EXPECT_NE(find(findings, "machines")->answer.find("38.7%"), std::string::npos);
}

TEST_F(AnswersTest, TheReportShowsFindingsMachinesAndThePredictionWithItsChart) {
  const analysis::SuiteData suite = load(machines_suite(0.13, 0.124));
  const std::string md = render_markdown({suite});
  for (const char* part :
       {"### Findings", "What each added machine buys", "### Prediction: what N hosts would do",
        "Predicted speedup over one host, batch per rank fixed",
        "Link bandwidth for 90% scaling efficiency", "Predicted vs measured on the virtual cluster",
        "| h2-gige-weak | gige |"}) {
    EXPECT_NE(md.find(part), std::string::npos) << part;
  }
  const std::string html = render_html({suite}, std::nullopt).html;
  EXPECT_NE(html.find("<dl class=\"findings\">"), std::string::npos);
  EXPECT_NE(html.find("Predicted vs measured on the virtual cluster"), std::string::npos);
  auto chart = prediction_chart(suite);
  ASSERT_TRUE(chart);
  // Scaling efficiency per scaling mode, one panel each, the legend outside
  // the plots (speedup on log2 hosts made every curve look exponential, and
  // its legend ran into the y label).
  EXPECT_NE(chart->script.find("set multiplot layout 1,2"), std::string::npos) << chart->script;
  EXPECT_NE(chart->script.find("set key outside"), std::string::npos) << chart->script;
  EXPECT_NE(chart->script.find("scaling efficiency"), std::string::npos) << chart->script;
  const DataFile* measured = nullptr;
  for (const auto& d : chart->data) {
    if (d.name == "measured-weak.dat") measured = &d;
  }
  ASSERT_NE(measured, nullptr);
  // Each measured point is an efficiency in percent, 2 hosts at its speedup / 2.
  double hosts = 0, efficiency = 0;
  std::istringstream(measured->content) >> hosts >> efficiency;
  EXPECT_EQ(hosts, 2);
  EXPECT_GT(efficiency, 10);
  EXPECT_LT(efficiency, 110);
  bool strong_measured = false;
  for (const auto& d : chart->data) strong_measured |= d.name == "measured-strong.dat";
  EXPECT_TRUE(strong_measured);
  bool listed = false;
  for (const auto& c : suite_charts(suite, compare_cases(suite)))
    listed = listed || c.id == "prediction";
  EXPECT_TRUE(listed);
}

// The 16-core host: 1 x 16 threads, 2 x 8, ... all on the same
// cores. Amdahl's law says nothing there; it is fitted once ranks bring cores.
TEST_F(AnswersTest, AmdahlIsFittedOnlyWhenComputeGrowsWithTheRanks) {
  SuiteSpec s;
  s.name = "scaling";
  s.cases = {
      {.name = "r1",
       .mode = "naive",
       .world_size = 1,
       .step_time_s = 0.1,
       .comm_share = 0,
       .threads = 16,
       .cores_online = 16},
      {.name = "r2",
       .mode = "sharded",
       .world_size = 2,
       .step_time_s = 0.2,
       .threads = 8,
       .cores_online = 16},
      {.name = "r4",
       .mode = "sharded",
       .world_size = 4,
       .step_time_s = 0.4,
       .threads = 4,
       .cores_online = 16},
      {.name = "r16",
       .mode = "sharded",
       .world_size = 16,
       .step_time_s = 1.6,
       .threads = 1,
       .cores_online = 16},
  };
  analysis::SuiteData suite = load(s);
  Comparison cmp = compare_cases(suite);
  EXPECT_FALSE(fit_amdahl(scaling_points(suite, cmp)));
  EXPECT_NE(amdahl_not_fitted_reason(suite, cmp).find("baseline's 16"), std::string::npos);
  EXPECT_EQ(render_markdown({suite}).find("Amdahl fit"), std::string::npos);
  EXPECT_NE(same_cores_note(suite, cmp)
                .find("no more cores than the one process of " + s.cases[0].name + " uses (16)"),
            std::string::npos)
      << same_cores_note(suite, cmp);
  // One thread per rank on a 16-core host: the ranks bring their cores.
  for (auto& c : s.cases) c.threads = 1;
  s.cases[3].world_size = 8;
  suite = load(s);
  cmp = compare_cases(suite);
  auto fit = fit_amdahl(scaling_points(suite, cmp));
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->points, 3);
  EXPECT_TRUE(amdahl_not_fitted_reason(suite, cmp).empty());
  EXPECT_TRUE(same_cores_note(suite, cmp).empty());
  // More ranks than cores (8 on 4): the growth in compute stops at 4.
  for (auto& c : s.cases) c.cores_online = 4;
  suite = load(s);
  const auto points = scaling_points(suite, compare_cases(suite));
  ASSERT_EQ(points.size(), 4u);
  EXPECT_DOUBLE_EQ(points[3].n, 4);
}

}  // namespace
}  // namespace trainscope::report
