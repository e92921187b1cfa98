// The prediction section's check table (report/model_check.h): the
// prediction beside SimGrid's stored steps, the replayed cases and the real
// ones, per link, reduction and host count; replayed cases never counted as
// measured ones.
#include "report/model_check.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "report/answers.h"
#include "report/suite_prediction.h"
#include "tests/suite_builder.h"

namespace trainscope::report {
namespace {

namespace fs = std::filesystem;
using testing::CaseSpec;
using testing::SuiteSpec;

// One host at batch 4, two real hosts over gige (weak scaling), the same
// replayed at 2 and 4 hosts, and SimGrid's steps at 2 and 8 hosts. The
// 4-host replay slowed `h4_time_scale` times (replay_time_scale).
analysis::SuiteData replay_suite(const fs::path& db_path, double h4_time_scale = 1) {
  SuiteSpec s;
  s.name = "replay";
  s.step_noise = 0;
  s.repetitions = 1;
  const CaseSpec one = testing::one_machine_spec("one-b4", 0.1, 4);
  const CaseSpec real = testing::two_hosts_gige_spec("real-h2", 0.13, 8, 4);
  CaseSpec replay2 = real;
  replay2.name = "replay-h2";
  replay2.step_time_s = 0.125;
  replay2.config = {{"replay_from", "one-b4"}};
  replay2.cores_online = 2;
  replay2.cpu_busy_per_rank = 0.2;  // 2 of 2 ranks: 20% of the CPUs
  CaseSpec replay4 = replay2;
  replay4.name = "replay-h4";
  replay4.hosts = 4;
  replay4.world_size = 4;
  replay4.batch = 16;
  replay4.step_time_s = 0.14 * h4_time_scale;
  if (h4_time_scale != 1) replay4.config["replay_time_scale"] = h4_time_scale;
  replay4.cpu_busy_per_rank = 0.48;  // 4 ranks: 96% of 2 CPUs
  s.cases = {one, real, replay2, replay4};
  fs::remove(db_path);
  testing::build_suite_db(db_path, s);
  {
    auto db = results::ResultsDb::open_for_writing(db_path);
    const int64_t id = *db.latest_suite_id();
    const std::vector<results::SimulatedStep> sims = {
        {.simulator = "SimGrid SMPI, lr", .link = "gige", .hosts = 2, .step_s = 0.135},
        {.simulator = "SimGrid SMPI, lr", .link = "gige", .hosts = 8, .step_s = 0.16}};
    db.replace_simulations(id, "SimGrid SMPI, lr", sims);
    db.replace_simulations(id, "SimGrid SMPI, lr", sims);  // replaced, not added
  }
  auto db = results::ResultsDb::open_for_reading(db_path);
  return analysis::load_suite(db, analysis::resolve_suite(db, "latest"));
}

TEST(ModelCheckTest, PredictionSimGridReplayAndRealPerHostCount) {
  const fs::path db =
      fs::temp_directory_path() / ("trainscope-model-check-" + std::to_string(::getpid()) + ".db");
  const analysis::SuiteData suite = replay_suite(db);
  fs::remove(db);
  ASSERT_EQ(suite.simulations.size(), 2u);
  const auto p = suite_prediction(suite);
  ASSERT_TRUE(p);
  // The replays are no measured case: only the real one is validated.
  ASSERT_EQ(p->validation.size(), 1u);
  EXPECT_EQ(p->validation[0].case_name, "real-h2");

  const auto rows = model_check_rows(suite, *p);
  ASSERT_EQ(rows.size(), 3u);  // gige after backward at 2, 4 and 8 hosts
  EXPECT_EQ(rows[0].hosts, 2);
  EXPECT_EQ(rows[0].real_case, "real-h2");
  EXPECT_EQ(rows[0].replay_case, "replay-h2");
  EXPECT_NEAR(rows[0].replay_s, 0.125, 0.005);
  EXPECT_NEAR(rows[0].real_s, 0.13, 0.005);
  EXPECT_DOUBLE_EQ(rows[0].simgrid_s, 0.135);
  EXPECT_TRUE(std::isfinite(rows[0].predicted_s));
  EXPECT_EQ(rows[1].hosts, 4);
  EXPECT_TRUE(std::isnan(rows[1].real_s));
  EXPECT_TRUE(std::isnan(rows[1].simgrid_s));
  EXPECT_EQ(rows[2].hosts, 8);
  EXPECT_TRUE(std::isnan(rows[2].replay_s));
  EXPECT_GT(rows[2].predicted_s, rows[0].predicted_s);

  const auto t = model_check_table(suite, *p);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->rows.size(), 3u);
  EXPECT_EQ(t->rows[0][7], "-");  // no replay of the real case here
  EXPECT_NE(t->rows[0][5].find("125"), std::string::npos);
  // The replay whose ranks kept the CPUs busy is marked, and the note says
  // why; the one with CPU to spare is not.
  EXPECT_NEAR(rows[1].replay_cpu_busy, 0.96, 1e-9);
  EXPECT_EQ(t->rows[0][5].find("CPUs"), std::string::npos) << t->rows[0][5];
  EXPECT_NE(t->rows[1][5].find("(CPUs 96% busy)"), std::string::npos) << t->rows[1][5];
  EXPECT_NE(t->note.find("waited for CPU"), std::string::npos);
  EXPECT_NE(t->note.find("SimGrid SMPI, lr"), std::string::npos);
  EXPECT_NE(answers_markdown(suite).find("The prediction checked"), std::string::npos);
}

// The link of the prediction is the one training saw: a real 2-host case's
// own gradient all-reduces (their bus bandwidth, latency inside it), not its
// link probe, whose back-to-back calls ran on gige at half the rate the
// training's calls did. Replays and overlap (its thread shares the cores with
// backward) are not such a source; without one, the probe.
TEST(ModelCheckTest, TheLinkIsTheRealCasesOwnAllReduces) {
  const fs::path db =
      fs::temp_directory_path() / ("trainscope-model-link-" + std::to_string(::getpid()) + ".db");
  const analysis::SuiteData suite = replay_suite(db);
  const auto p = suite_prediction(suite);
  ASSERT_TRUE(p);
  const PredictedLink* gige = nullptr;
  for (const auto& l : p->links) gige = l.model.name == "gige" ? &l : gige;
  ASSERT_NE(gige, nullptr);
  const analysis::CaseData* real = suite.find_case("real-h2");
  ASSERT_NE(real, nullptr);
  const double busbw = analysis::case_figures(*real).grad_busbw_gbps;
  ASSERT_GT(busbw, 0);
  EXPECT_NEAR(gige->model.bandwidth_Bps, busbw * 1e9, 1);  // not the probe's 1 Gbit/s
  EXPECT_EQ(gige->model.latency_s, 0);
  EXPECT_NE(gige->source.find("gradient all-reduces of real-h2"), std::string::npos)
      << gige->source;

  SuiteSpec s;
  s.name = "overlap-only";
  s.step_noise = 0;
  s.repetitions = 1;
  CaseSpec overlap = testing::two_hosts_gige_spec("real-overlap", 0.13, 8, 4);
  overlap.reduction = "overlap";
  overlap.bucket_mb = 1;
  s.cases = {testing::one_machine_spec("one-b4", 0.1, 4), overlap};
  fs::remove(db);
  testing::build_suite_db(db, s);
  auto rdb = results::ResultsDb::open_for_reading(db);
  const auto probed =
      suite_prediction(analysis::load_suite(rdb, analysis::resolve_suite(rdb, "latest")));
  fs::remove(db);
  ASSERT_TRUE(probed);
  const PredictedLink* probe = nullptr;
  for (const auto& l : probed->links) probe = l.model.name == "gige" ? &l : probe;
  ASSERT_NE(probe, nullptr);
  EXPECT_NEAR(probe->model.bandwidth_Bps, 1e9 / 8, 1);
  EXPECT_NE(probe->source.find("measured with real-overlap"), std::string::npos) << probe->source;
}

// A replay's links are judged against the rate the prediction itself uses,
// the real 2-host case's measured one, not the profile's nominal rate: on
// 2.5gbe the real case moved 2.8 Gbit/s, and 8 replayed hosts at 2.1 (83% of
// the profile, 74% of the measure) went unmarked while missing the
// prediction by 20% (issue 38).
TEST(ModelCheckTest, ReplayLinksAreJudgedAgainstTheMeasuredLink) {
  const fs::path db =
      fs::temp_directory_path() / ("trainscope-model-share-" + std::to_string(::getpid()) + ".db");
  const analysis::SuiteData suite = replay_suite(db);
  fs::remove(db);
  const auto p = suite_prediction(suite);
  ASSERT_TRUE(p);
  const PredictedLink* gige = nullptr;
  for (const auto& l : p->links) gige = l.model.name == "gige" ? &l : gige;
  ASSERT_NE(gige, nullptr);
  const double measured_GBps = gige->model.bandwidth_Bps / 1e9, nominal_GBps = 1.0 / 8;
  ASSERT_GT(std::abs(measured_GBps / nominal_GBps - 1), 0.05) << "the two rates must differ";
  const auto rows = model_check_rows(suite, *p);
  ASSERT_EQ(rows.size(), 3u);
  for (int i : {0, 1}) {
    const analysis::CaseData* replay = suite.find_case(rows[i].replay_case);
    ASSERT_NE(replay, nullptr) << rows[i].hosts << " hosts";
    const double busbw = analysis::case_figures(*replay).grad_busbw_gbps;
    EXPECT_NEAR(rows[i].replay_link_share, busbw / measured_GBps, 1e-9) << rows[i].replay_case;
  }
}

// A replay slowed down S times (compute and links) stands for the cluster
// in its own time: its step divided by S, its bus bandwidth times S, marked.
TEST(ModelCheckTest, ASlowedReplayIsShownInTheClustersTime) {
  const fs::path db =
      fs::temp_directory_path() / ("trainscope-model-slow-" + std::to_string(::getpid()) + ".db");
  const analysis::SuiteData plain = replay_suite(db), slowed = replay_suite(db, 2.5);
  fs::remove(db);
  const auto p = suite_prediction(plain), q = suite_prediction(slowed);
  ASSERT_TRUE(p && q);
  const auto a = model_check_rows(plain, *p), b = model_check_rows(slowed, *q);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[1].replay_time_scale, 2.5);
  EXPECT_EQ(b[0].replay_time_scale, 1);
  EXPECT_NEAR(b[1].replay_s, a[1].replay_s, 1e-9);
  EXPECT_NEAR(b[1].replay_link_share, a[1].replay_link_share, 1e-9);
  const auto t = model_check_table(slowed, *q);
  ASSERT_TRUE(t);
  EXPECT_NE(t->rows[1][5].find("(x2.5 slower)"), std::string::npos) << t->rows[1][5];
  EXPECT_EQ(t->rows[0][5].find("slower"), std::string::npos) << t->rows[0][5];
  EXPECT_NE(t->note.find("divided by S"), std::string::npos);
}

// Strong scaling (the global batch fixed): each rank computes what one host
// measured at batch / N, so the row's prediction starts from that case; a
// host count without one has no prediction. Weak rows are their own table.
TEST(ModelCheckTest, StrongScalingRowsStartFromTheOneHostCaseAtTheRanksBatch) {
  const fs::path db_path =
      fs::temp_directory_path() / ("trainscope-model-strong-" + std::to_string(::getpid()) + ".db");
  SuiteSpec s;
  s.name = "replay";
  s.step_noise = 0;
  s.repetitions = 1;
  const CaseSpec one = testing::one_machine_spec("one-b4", 0.1, 4);
  const CaseSpec half = testing::one_machine_spec("one-b2", 0.06, 2);
  const CaseSpec weak = testing::two_hosts_gige_spec("real-h2", 0.13, 8, 4);
  CaseSpec strong2 = testing::two_hosts_gige_spec("replay-strong-h2", 0.08, 4);
  strong2.config = {{"replay_from", "one-b2"}};
  CaseSpec strong4 = strong2;  // batch 1 a rank: no one-host case at it
  strong4.name = "replay-strong-h4";
  strong4.hosts = 4;
  strong4.world_size = 4;
  strong4.config = {{"replay_from", "one-b1"}};
  s.cases = {one, half, weak, strong2, strong4};
  fs::remove(db_path);
  testing::build_suite_db(db_path, s);
  auto db = results::ResultsDb::open_for_reading(db_path);
  const analysis::SuiteData suite = analysis::load_suite(db, analysis::resolve_suite(db, "latest"));
  fs::remove(db_path);
  const auto p = suite_prediction(suite);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->compute_case, "one-b4");

  const auto rows = model_check_rows(suite, *p);
  std::vector<ModelCheckRow> strong;
  for (const auto& r : rows) {
    if (r.scaling == analysis::Scaling::kStrong) strong.push_back(r);
  }
  ASSERT_EQ(strong.size(), 2u);
  EXPECT_EQ(strong[0].hosts, 2);
  EXPECT_EQ(strong[0].replay_case, "replay-strong-h2");
  // From one-b2's 60 ms of compute plus the all-reduce: above 60 ms, below
  // the weak row's, which starts from one-b4's 100 ms.
  double weak_h2 = NAN;
  for (const auto& r : rows) {
    if (r.scaling == analysis::Scaling::kWeak && r.hosts == 2) weak_h2 = r.predicted_s;
  }
  EXPECT_GT(strong[0].predicted_s, 0.06);
  EXPECT_LT(strong[0].predicted_s, weak_h2);
  EXPECT_TRUE(std::isnan(strong[1].predicted_s)) << strong[1].predicted_s;

  const auto strong_table = model_check_table(suite, *p, analysis::Scaling::kStrong);
  ASSERT_TRUE(strong_table);
  EXPECT_NE(strong_table->title.find("strong scaling"), std::string::npos);
  ASSERT_EQ(strong_table->rows.size(), 2u);
  EXPECT_EQ(strong_table->rows[1][3], "-");
  EXPECT_NE(strong_table->note.find("global batch / N"), std::string::npos);
  // No replay or simulation at weak scaling here: no weak table.
  EXPECT_FALSE(model_check_table(suite, *p, analysis::Scaling::kWeak));
}

}  // namespace
}  // namespace trainscope::report
