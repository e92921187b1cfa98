// The report's shares of the machine's limits (report/limits.h) on synthetic
// suites: the share is the achieved figure over the limit of the case's key,
// the note names the limits, a suite without limits says so, and the
// doctor's limits of the suite's host stand in for a suite's own.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "analysis/intervals.h"
#include "report/comparison.h"
#include "report/findings.h"
#include "report/limits.h"
#include "report/report.h"
#include "tests/suite_builder.h"
#include "tests/temp_dir.h"

namespace trainscope::report {
namespace {

using results::LimitKind;
using results::MachineLimit;
using testing::build_suite_db;
using testing::CaseSpec;
using testing::SuiteSpec;

// Rows a tokens per rank step, as suite_builder's summaries record them.
constexpr int kBatch = 4;
int64_t rows_of(int world_size) { return kBatch / world_size * 32; }

MachineLimit sgemm(int64_t rows, double gflops) {
  return {.kind = LimitKind::kSgemm,
          .model = "tiny",
          .rows = rows,
          .threads = 1,
          .value = gflops,
          .detail = "test shapes",
          .source = "trainscope suite run",
          .host = "node0",
          .measured_at = "2026-01-01T00:00:00.000Z"};
}
MachineLimit allreduce(const std::string& transport, int ranks, double gbps) {
  return {.kind = LimitKind::kAllReduce,
          .transport = transport,
          .ranks = ranks,
          .value = gbps,
          .detail = "test sweep",
          .source = "trainscope suite run",
          .host = "node0",
          .measured_at = "2026-01-01T00:00:00.000Z"};
}

SuiteSpec two_cases() {
  SuiteSpec s;
  s.name = "limits";
  s.repetitions = 3;
  s.batch = kBatch;
  s.cases = {
      CaseSpec{
          .name = "one", .mode = "naive", .world_size = 1, .batch = kBatch, .flops_per_step = 2e9},
      CaseSpec{
          .name = "two", .world_size = 2, .links = "shm", .batch = kBatch, .flops_per_step = 2e9}};
  return s;
}

class LimitsTest : public ::testing::Test {
 protected:
  analysis::SuiteData build(const SuiteSpec& spec) {
    const auto path = dir_ / "limits.db";
    build_suite_db(path, spec);
    auto db = results::ResultsDb::open_for_writing(path);
    for (const MachineLimit& l : doctor_limits_) {
      db.add_machine_limits(std::nullopt, std::vector{l});
    }
    return analysis::load_suite(db, analysis::resolve_suite(db, "latest"));
  }
  trainscope::testing::TempDir dir_{"limits"};
  std::vector<MachineLimit> doctor_limits_;
};

// What the case achieved, from its stored summaries: per repetition the
// FLOPs per step over the ranks and the step median; the gradient sync's bus
// bytes over its time per measured step of rank 0; medians of those.
double achieved_gflops(const analysis::CaseData& c) {
  std::vector<double> v;
  for (const analysis::RunData* r : c.usable_runs()) {
    const auto& s = *r->summary;
    v.push_back(s.flops_per_step / s.world_size / s.totals.step_time_median_s / 1e9);
  }
  return results::median_of(v);
}
double achieved_busbw(const analysis::CaseData& c) {
  std::vector<double> per_run;
  for (const analysis::RunData* r : c.usable_runs()) {
    const auto& s = *r->summary;
    std::vector<double> steps;
    const double n = s.world_size;
    for (size_t k = 1; k < s.steps[0].size(); ++k) {  // after the one warm-up step
      const auto& st = s.steps[0][k];
      steps.push_back(2 * (n - 1) / n * static_cast<double>(st.comm_bytes) / st.comm_time_s / 1e9);
    }
    per_run.push_back(results::median_of(steps));
  }
  return results::median_of(per_run);
}

TEST_F(LimitsTest, TheShareIsTheAchievedFigureOverTheLimitOfTheCasesKey) {
  SuiteSpec spec = two_cases();
  spec.limits = {sgemm(rows_of(1), 40), sgemm(rows_of(2), 25), allreduce("shm", 2, 3.0),
                 // Other keys: not this suite's cases.
                 sgemm(1000, 1), allreduce("tcp", 2, 0.1)};
  const analysis::SuiteData suite = build(spec);
  const auto shares = limit_shares(suite);
  ASSERT_EQ(shares.size(), 2u);
  const analysis::CaseData& one = *suite.find_case("one");
  const analysis::CaseData& two = *suite.find_case("two");
  ASSERT_GT(achieved_gflops(one), 0);
  EXPECT_NEAR(shares[0].gflops, achieved_gflops(one), 1e-9);
  EXPECT_NEAR(shares[0].gflops_share, achieved_gflops(one) / 40, 1e-9);
  EXPECT_TRUE(std::isnan(shares[0].busbw_share));  // one rank syncs nothing
  EXPECT_NEAR(shares[1].gflops_share, achieved_gflops(two) / 25, 1e-9);
  ASSERT_GT(achieved_busbw(two), 0);
  EXPECT_NEAR(shares[1].busbw, achieved_busbw(two), 1e-9);
  EXPECT_NEAR(shares[1].busbw_share, achieved_busbw(two) / 3.0, 1e-9);

  // The table shows them as percentages and names each limit in its note.
  const Table t = limits_table(suite);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[1][3], format_number(achieved_gflops(two) / 25 * 100, 1) + "%");
  EXPECT_EQ(t.rows[1][7], format_number(achieved_busbw(two) / 3.0 * 100, 1) + "%");
  EXPECT_NE(t.note.find("sgemm, tiny, 64 rows, 1 thread: 25.00 GFLOP/s (test shapes; by "
                        "trainscope suite run on node0"),
            std::string::npos)
      << t.note;
  EXPECT_NE(t.note.find("all-reduce busbw, shm, 2 ranks: 3.00 GB/s"), std::string::npos) << t.note;
  EXPECT_EQ(t.note.find("tcp"), std::string::npos) << "an unused limit is not named: " << t.note;
  EXPECT_NE(render_markdown({suite}).find("Achieved vs the machine's measured limits"),
            std::string::npos);
}

// A case's --gemm picks the library its GEMMs run on, and so the limit: of
// two limits differing only in it, each case is held against its own (the
// latest stored first, so order alone would give both the onednn one). A
// limit stored before --gemm was recorded applies under any.
TEST_F(LimitsTest, TheLimitIsOfTheCasesGemm) {
  SuiteSpec spec = two_cases();
  spec.cases[0].config = {{"gemm", "openblas"}};
  spec.cases[1].config = {{"gemm", "onednn"}};
  MachineLimit one_blas = sgemm(rows_of(1), 10), one_dnnl = sgemm(rows_of(1), 40);
  MachineLimit two_blas = sgemm(rows_of(2), 5), two_dnnl = sgemm(rows_of(2), 20);
  one_blas.gemm = two_blas.gemm = "openblas";
  one_dnnl.gemm = two_dnnl.gemm = "onednn";
  spec.limits = {one_blas, two_blas, one_dnnl, two_dnnl};
  analysis::SuiteData suite = build(spec);
  auto shares = limit_shares(suite);
  ASSERT_EQ(shares.size(), 2u);
  EXPECT_NEAR(shares[0].gflops_share, achieved_gflops(*suite.find_case("one")) / 10, 1e-9);
  EXPECT_NEAR(shares[1].gflops_share, achieved_gflops(*suite.find_case("two")) / 20, 1e-9);
  EXPECT_NE(limits_table(suite).note.find("sgemm, tiny, 128 rows, 1 thread, --gemm openblas: "),
            std::string::npos)
      << limits_table(suite).note;

  spec.limits = {sgemm(rows_of(1), 40)};  // no --gemm recorded
  suite = build(spec);
  shares = limit_shares(suite);
  EXPECT_NEAR(shares[0].gflops_share, achieved_gflops(*suite.find_case("one")) / 40, 1e-9);
}

// The sgemm measured on as many CPUs at once as a case has ranks: all the
// copies together over one alone is what its ranks can reach on compute.
// The share stays against the one alone, and a finding sets the case's
// speed over one process beside that ceiling.
TEST_F(LimitsTest, TheRanksCpusAtOnceSayWhatTheirComputeCanReach) {
  SuiteSpec spec = two_cases();
  MachineLimit at_once = sgemm(rows_of(2), 20);
  at_once.ranks = 2;
  spec.limits = {at_once, sgemm(rows_of(2), 25), sgemm(rows_of(1), 40)};
  const analysis::SuiteData suite = build(spec);
  const auto shares = limit_shares(suite);
  ASSERT_EQ(shares.size(), 2u);
  EXPECT_EQ(shares[0].sgemm_at_once, nullptr) << "one rank has nothing at once";
  EXPECT_TRUE(std::isnan(shares[0].cores_ceiling));
  ASSERT_NE(shares[1].sgemm_at_once, nullptr);
  EXPECT_EQ(shares[1].sgemm_at_once->ranks, 2);
  EXPECT_NEAR(shares[1].cores_ceiling, 2 * 20.0 / 25, 1e-12);
  EXPECT_NEAR(shares[1].gflops_share, achieved_gflops(*suite.find_case("two")) / 25, 1e-9)
      << "the share is of one CPU alone";

  const Table t = limits_table(suite);
  EXPECT_EQ(t.rows[0][4], "-");
  EXPECT_EQ(t.rows[1][4], format_number(2 * 20.0 / 25, 2) + "x of 2");
  EXPECT_NE(t.note.find("sgemm, tiny, 64 rows, 1 thread, 2 at once: 20.00 GFLOP/s"),
            std::string::npos)
      << t.note;

  const double ceiling = 2 * 20.0 / 25;
  const auto cores_answer = [](const analysis::SuiteData& s) {
    for (const Finding& f : suite_findings(s)) {
      if (f.id == "cores") return f.answer;
    }
    return std::string("(no cores finding)");
  };
  // "one" runs the whole global batch: not one rank's work, no reference.
  EXPECT_EQ(cores_answer(suite), "(no cores finding)");

  // The reference is one process doing one rank's work (its rows, the
  // limits' rows) on one thread: not one listed first on both CPUs, nor one
  // running the whole global batch.
  SuiteSpec with_half = spec;
  CaseSpec half = with_half.cases[0];
  half.name = "half";
  half.batch = kBatch / 2;
  CaseSpec both = half;
  both.name = "both";
  both.threads = 2;
  both.step_time_s /= 1.8;
  with_half.cases.insert(with_half.cases.begin(), both);
  with_half.cases.push_back(half);
  const analysis::SuiteData halved = build(with_half);
  // Over the repetitions of each, as every ratio of cases in the report.
  const analysis::Interval speedup =
      analysis::bootstrap_ratio_of_medians(repetition_tokens_per_s(*halved.find_case("two")),
                                           repetition_tokens_per_s(*halved.find_case("half")));
  ASSERT_TRUE(speedup.has_interval());
  const std::string answer = cores_answer(halved);
  EXPECT_NE(answer.find("two ran " + analysis::format_interval(speedup, 2, "x") +
                        " the tokens/s of half, where its 2 CPUs side by side ran its GEMMs " +
                        format_number(ceiling, 2) + "x one CPU"),
            std::string::npos)
      << answer;
  EXPECT_NE(answer.find(format_number(speedup.estimate / ceiling, 2) + "x of that ceiling"),
            std::string::npos)
      << answer;

  spec.limits.erase(spec.limits.begin());  // no copies at once: no ceiling, no finding
  const analysis::SuiteData alone = build(spec);
  EXPECT_TRUE(std::isnan(limit_shares(alone)[1].cores_ceiling));
  for (const Finding& f : suite_findings(alone)) EXPECT_NE(f.id, "cores");
}

TEST_F(LimitsTest, ACaseWithoutALimitOfItsKeyShowsNoShare) {
  SuiteSpec spec = two_cases();
  spec.limits = {sgemm(rows_of(1), 40)};  // nothing at two's rows, no transport
  const Table t = limits_table(build(spec));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_NE(t.rows[0][3], "-");
  EXPECT_EQ(t.rows[1][2], "-");
  EXPECT_EQ(t.rows[1][3], "-");
  EXPECT_EQ(t.rows[1][7], "-");
  EXPECT_NE(t.rows[1][5], "-") << "the achieved busbw is shown without a limit";
}

TEST_F(LimitsTest, ASuiteWithoutLimitsSaysNoneWereMeasured) {
  const analysis::SuiteData suite = build(two_cases());
  EXPECT_TRUE(suite.limits.empty());
  EXPECT_TRUE(limits_table(suite).rows.empty()) << "no column of dashes";
  EXPECT_NE(no_limits_note(suite).find("No machine limits were measured for this suite"),
            std::string::npos);
  const std::string md = render_markdown({suite});
  EXPECT_NE(md.find("No machine limits were measured"), std::string::npos);
  EXPECT_EQ(md.find("Achieved vs the machine's measured limits"), std::string::npos);
}

// A bf16 case is held against the bf16 GEMM's limit, never fp32's sgemm.
TEST_F(LimitsTest, ABf16CaseIsHeldAgainstTheBf16GemmLimit) {
  SuiteSpec spec = two_cases();
  spec.cases[0].config["precision"] = "bf16";
  MachineLimit bf16 = sgemm(rows_of(1), 80);
  bf16.precision = "bf16";
  spec.limits = {sgemm(rows_of(1), 40), sgemm(rows_of(2), 25)};
  const auto fp32_only = limit_shares(build(spec));
  EXPECT_EQ(fp32_only[0].sgemm, nullptr) << "the fp32 limit was used for a bf16 case";
  EXPECT_NE(fp32_only[1].sgemm, nullptr);
  spec.limits.push_back(bf16);
  const analysis::SuiteData suite = build(spec);
  const auto shares = limit_shares(suite);
  ASSERT_NE(shares[0].sgemm, nullptr);
  EXPECT_EQ(shares[0].sgemm->precision, "bf16");
  EXPECT_NEAR(shares[0].gflops_share, achieved_gflops(*suite.find_case("one")) / 80, 1e-9);
  EXPECT_NE(limits_table(suite).note.find("bf16 GEMM, tiny, 128 rows, 1 thread: 80.00"),
            std::string::npos)
      << limits_table(suite).note;
}

// The doctor measures on OpenBLAS; its limit stands in under any --gemm
// (the note names its library), or a case on auto would have none.
TEST_F(LimitsTest, TheDoctorsLimitsOfTheSuitesHostStandInForTheSuitesOwn) {
  MachineLimit mine = sgemm(rows_of(1), 50);
  mine.source = "trainscope doctor";
  mine.gemm = "openblas";
  MachineLimit elsewhere = sgemm(rows_of(2), 10);
  elsewhere.source = "trainscope doctor";
  elsewhere.host = "another-host";
  doctor_limits_ = {mine, elsewhere};
  const analysis::SuiteData suite = build(two_cases());
  ASSERT_EQ(suite.limits.size(), 1u);
  const auto shares = limit_shares(suite);
  EXPECT_NEAR(shares[0].gflops_share, achieved_gflops(*suite.find_case("one")) / 50, 1e-9);
  EXPECT_TRUE(std::isnan(shares[1].gflops_share)) << "another host's limit is not this one's";
  EXPECT_NE(limits_table(suite).note.find("by trainscope doctor on node0"), std::string::npos);
  EXPECT_NE(limits_table(suite).note.find("--gemm openblas"), std::string::npos);
}

// Summaries written before FLOPs were recorded: no achieved GFLOP/s, no share.
TEST_F(LimitsTest, RunsWithoutFlopsShowNoGflops) {
  SuiteSpec spec = two_cases();
  for (auto& c : spec.cases) c.flops_per_step = 0;
  spec.limits = {sgemm(rows_of(1), 40)};
  const auto shares = limit_shares(build(spec));
  EXPECT_TRUE(std::isnan(shares[0].gflops));
  EXPECT_TRUE(std::isnan(shares[0].gflops_share));
}

}  // namespace
}  // namespace trainscope::report
