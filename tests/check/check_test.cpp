// Regression checks: the library against injected regressions and honest
// reruns (step times, all-reduce busbw per size), repetitions too few to test,
// the CI smoke gate's power, machine-load warnings (`trainscope check` end to
// end: check_cli_test.cpp).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/check.h"
#include "check/regression_check.h"
#include "suites/suite_config.h"
#include "tests/check/check_fixture.h"

namespace trainscope::check {
namespace {

TEST_F(CheckTest, TwoHonestRunsOfTheSameCodePass) {
  auto r = check(db("a.db", honest(1)), db("b.db", honest(2)));
  EXPECT_EQ(r.regressions(), 0) << check_table_text(r);
  const CheckRow* row = find_row(r, "fused", "step time median");
  ASSERT_NE(row, nullptr) << check_table_text(r);
  EXPECT_FALSE(row->p_value.empty());
  ASSERT_NE(find_row(r, "fused", "tracked.activations"), nullptr);
  EXPECT_EQ(find_row(r, "fused", "train loss")->verdict, Verdict::kSame);
}

// A baseline from another machine (the committed smoke baseline on a CI host
// with another CPU) is no reference for timings: only exact figures and
// ratio rules are checked, and a warning says why, unless asked.
TEST_F(CheckTest, TimingsAreNotComparedWithABaselineFromAnotherMachine) {
  auto slow = honest(2);
  slow.slowdown = 1.5;
  slow.cpu_model = "Another CPU";
  const std::string base = db("a.db", honest(1)), current = db("b.db", slow);
  auto r = check(base, current);
  EXPECT_EQ(r.regressions(), 0) << check_table_text(r);
  EXPECT_EQ(find_row(r, "fused", "step time median"), nullptr);
  EXPECT_EQ(find_row(r, "fused", "tracked.total")->verdict, Verdict::kSame);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(check_table_text(r).find("another machine"), std::string::npos);
  // A baseline that records no machine (saved before machines were) says
  // that, not "another machine", and how to mend it.
  auto b = load_check_suite(base, "latest");
  b.machine = nlohmann::json::object();
  const auto c = load_check_suite(current, "latest");
  const CheckResult unknown = run_check(&b, c, {});
  EXPECT_EQ(find_row(unknown, "fused", "step time median"), nullptr);
  EXPECT_NE(check_table_text(unknown).find("the baseline records no machine"), std::string::npos)
      << check_table_text(unknown);
  CheckOptions across;
  across.timings_across_machines = true;
  r = check(base, current, across);
  EXPECT_EQ(find_row(r, "fused", "step time median")->verdict, Verdict::kRegression);
}

TEST_F(CheckTest, SlowerStepsOverRepetitionsAreARegression) {
  auto slow = honest(2);
  slow.slowdown = 1.5;
  auto r = check(db("a.db", honest(1)), db("b.db", slow));
  const CheckRow* row = find_row(r, "fused", "step time median");
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->verdict, Verdict::kRegression) << check_table_text(r);
  EXPECT_LT(std::stod(row->p_value), 0.05);
  EXPECT_EQ(find_row(r, "fused", "tokens/s")->verdict, Verdict::kInfo);  // shown, not tested
  EXPECT_NE(find_row(r, "fused", "tokens/s")->change.find("-3"), std::string::npos);
  // Deterministic figures did not move.
  EXPECT_EQ(find_row(r, "fused", "tracked.total")->verdict, Verdict::kSame);
}

TEST_F(CheckTest, SlowdownBelowTheThresholdOrNotSignificantPasses) {
  auto slow = honest(2);
  slow.slowdown = 1.5;
  CheckOptions lax;
  lax.threshold_pct = 60;
  EXPECT_EQ(check(db("a.db", honest(1)), db("b.db", slow), lax).regressions(), 0);
}

// Steps within one run are not independent samples: with 2 repetitions a
// side nothing is tested on them, however many steps there are.
TEST_F(CheckTest, FewRepetitionsAreInconclusiveNeverTestedOnSteps) {
  auto base = honest(1), slow = honest(2);
  base.repetitions = slow.repetitions = 2;
  base.steps = slow.steps = 200;
  slow.slowdown = 1.5;
  auto r = check(db("a.db", base), db("b.db", slow));
  EXPECT_EQ(find_row(r, "overlap", "step time"), nullptr) << check_table_text(r);
  const CheckRow* row = find_row(r, "overlap", "step time median");
  ASSERT_NE(row, nullptr) << check_table_text(r);
  EXPECT_EQ(row->verdict, Verdict::kInconclusive) << check_table_text(r);
  EXPECT_TRUE(row->p_value.empty());
  EXPECT_NE(row->note.find("2 vs 2 repetitions: the test cannot reach p < 0.05 whatever the "
                           "times; needs"),
            std::string::npos)
      << row->note;
  // The change still shows, with its interval from the repetitions.
  EXPECT_NEAR(std::stod(row->change), 50, 5) << row->change;
  EXPECT_NE(row->change.find(" ["), std::string::npos) << row->change;
  EXPECT_EQ(r.regressions(), 0);
}

TEST_F(CheckTest, OneRepetitionIsInconclusiveAndSaysWhatItNeeds) {
  auto base = honest(1), slow = honest(2);
  base.repetitions = slow.repetitions = 1;
  slow.slowdown = 1000;
  auto r = check(db("a.db", base), db("b.db", slow));
  const CheckRow* row = find_row(r, "fused", "step time median");
  ASSERT_NE(row, nullptr) << check_table_text(r);
  EXPECT_EQ(row->verdict, Verdict::kInconclusive) << check_table_text(r);
  EXPECT_NE(row->note.find("1 vs 1 repetitions: the test cannot reach p < 0.05 whatever the "
                           "times; needs at least 4 repetitions a side"),
            std::string::npos)
      << row->note;
  EXPECT_NE(row->change.find("% (one repetition: no interval)"), std::string::npos) << row->change;
  EXPECT_EQ(row->detectable, "-");
  EXPECT_EQ(r.inconclusive(), 4) << check_table_text(r);  // the step time row of each case
  EXPECT_EQ(r.regressions(), 0);
  const std::string text = check_table_text(r);
  EXPECT_NE(text.find("INCONCLUSIVE"), std::string::npos) << text;
  EXPECT_NE(text.find("0 regression(s) in"), std::string::npos) << text;
  EXPECT_NE(text.find("4 inconclusive"), std::string::npos) << text;
  EXPECT_NE(check_markdown(r).find("**INCONCLUSIVE**"), std::string::npos);
  // 3 vs 3 reaches p = 0.1: a laxer alpha makes it a test.
  base.repetitions = slow.repetitions = 3;
  CheckOptions lax;
  lax.alpha = 0.2;
  lax.threshold_pct = 50;
  const auto three = check(db("c.db", base), db("d.db", slow), lax);
  EXPECT_EQ(find_row(three, "fused", "step time median")->verdict, Verdict::kRegression)
      << check_table_text(three);
}

// Repetitions that differ by 10% from run to run cannot see a 5% slowdown in
// 5 vs 5: the row says so and how many would, instead of passing.
TEST_F(CheckTest, NoisyRepetitionsAreInconclusiveUntilThereAreEnough) {
  auto base = honest(1), cur = honest(2);
  base.run_noise = cur.run_noise = 0.10;
  auto r = check(db("a.db", base), db("b.db", cur));
  const CheckRow* row = find_row(r, "fused", "step time median");
  ASSERT_NE(row, nullptr) << check_table_text(r);
  EXPECT_EQ(row->verdict, Verdict::kInconclusive) << check_table_text(r);
  EXPECT_NE(row->note.find("a slowdown of 5% would go unseen; needs"), std::string::npos)
      << row->note;
  EXPECT_GT(std::stod(row->detectable), 5.0) << row->detectable;
  // With little run-to-run noise the same sizes suffice.
  base.run_noise = cur.run_noise = 0.002;
  const auto quiet = check(db("c.db", base), db("d.db", cur));
  const CheckRow* ok = find_row(quiet, "fused", "step time median");
  EXPECT_EQ(ok->verdict, Verdict::kSame) << check_table_text(quiet);
  EXPECT_LT(std::stod(ok->detectable), 5.0) << ok->detectable;
}

// The CI gate (scripts/smoke-check.sh): with the smoke suite's repetitions
// and the threshold its committed baseline carries, a 25% slowdown of every
// case is a regression and an unchanged rerun is neither a regression nor
// inconclusive, under the noise of a two-rank smoke case on the 2-core
// development machine (steps within ~6%, one in ~20 preempted and 2-15x
// slower; run medians 7-11% apart, 1.4826 x their median absolute deviation,
// `check calibrate smoke` over 7 runs back to back), the same noise for
// every case here. (On the VM the one-process case was noisier, 24%, and
// its row INCONCLUSIVE: docs/METRICS.md.)
TEST_F(CheckTest, TheSmokeGateDetectsA25PercentSlowdownAndPassesAnUnchangedRerun) {
  const suites::Suite smoke = suites::load_suite_file(TRAINSCOPE_SOURCE_DIR "/suites/smoke.toml");
  const CheckSuite gate = load_baseline(TRAINSCOPE_SOURCE_DIR "/suites/baselines/smoke.json");
  ASSERT_TRUE(gate.threshold_pct) << "the smoke baseline carries the gate's threshold";
  SuiteSpec spec;
  spec.name = "smoke";
  spec.repetitions = smoke.repetitions;
  spec.steps = static_cast<int>(smoke.cases.at(0).train.steps);
  spec.warmup_steps = static_cast<int>(smoke.cases.at(0).train.warmup_steps);
  spec.step_noise = 0.06;
  spec.outlier_rate = 0.05;
  spec.run_noise = 0.09;
  for (const auto& c : smoke.cases) {
    spec.cases.push_back({.name = c.name,
                          .mode = std::string(enum_name(c.train.data.data_mode)),
                          .reduction = std::string(enum_name(c.train.reduce)),
                          .world_size = c.ranks,
                          .step_time_s = 0.004});
    // The committed baseline was made with at least the suite's repetitions.
    const CaseRecord* committed = gate.find(c.name);
    ASSERT_NE(committed, nullptr) << c.name;
    EXPECT_GE(committed->timings.step_time_median_s.size(), static_cast<size_t>(spec.repetitions))
        << c.name << ": refresh the baseline (./scripts/smoke-check.sh --save-baseline)";
  }
  CheckOptions o;
  o.threshold_pct = gate.threshold_pct;
  ASSERT_LT(*o.threshold_pct, 25.0);
  for (unsigned seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    spec.seed = seed;
    spec.slowdown = 1;
    const std::string base = db(fmt::format("base{}.db", seed), spec);
    spec.seed = seed + 100;
    const auto rerun = check(base, db(fmt::format("rerun{}.db", seed), spec), o);
    EXPECT_EQ(rerun.regressions(), 0) << check_table_text(rerun);
    EXPECT_EQ(rerun.inconclusive(), 0) << check_table_text(rerun);
    spec.seed = seed + 200;
    spec.slowdown = 1.25;
    const auto slow = check(base, db(fmt::format("slow{}.db", seed), spec), o);
    for (const auto& c : smoke.cases) {
      const CheckRow* row = find_row(slow, c.name, "step time median");
      ASSERT_NE(row, nullptr) << c.name << "\n" << check_table_text(slow);
      EXPECT_EQ(row->verdict, Verdict::kRegression) << c.name << "\n" << check_table_text(slow);
    }
  }
}

TEST_F(CheckTest, ABusbwDropAtSomeSizesIsARegressionNamingThem) {
  auto sweep = [&](const std::string& name, testing::SweepSpec spec) {
    testing::build_sweep_db(dir_ / name, spec);
    return (dir_ / name).string();
  };
  testing::SweepSpec spec;
  spec.repetitions = 8;  // 2% noise per repetition: 8 vs 8 detect 5%
  const std::string base = sweep("base.db", spec);
  spec.seed = 2;
  const auto same = check(base, sweep("same.db", spec));
  EXPECT_EQ(same.regressions(), 0) << check_table_text(same);
  EXPECT_EQ(same.inconclusive(), 0) << check_table_text(same);
  const CheckRow* row = find_row(same, "tcp-l2", "busbw 131072 B");
  ASSERT_NE(row, nullptr) << check_table_text(same);
  EXPECT_EQ(row->verdict, Verdict::kSame);
  EXPECT_NE(row->note.find("8 vs 8 repetitions"), std::string::npos) << row->note;
  EXPECT_NE(row->change.find(" ["), std::string::npos) << row->change;
  EXPECT_EQ(find_row(same, "shm", "step time"), nullptr) << "a sweep has no steps";

  spec.seed = 3;
  spec.slowdown = {{131072, 1.5}, {1 << 20, 1.5}};  // busbw drops by a third at two sizes
  const auto slow = check(base, sweep("slow.db", spec));
  EXPECT_EQ(slow.regressions(), 4) << check_table_text(slow);  // two sizes of two cases
  for (const char* name : {"shm", "tcp-l2"}) {
    EXPECT_EQ(find_row(slow, name, "busbw 131072 B")->verdict, Verdict::kRegression);
    EXPECT_EQ(find_row(slow, name, "busbw 1048576 B")->verdict, Verdict::kRegression);
    EXPECT_EQ(find_row(slow, name, "busbw 1024 B")->verdict, Verdict::kSame);
  }
  EXPECT_NE(check_table_text(slow).find("busbw 1048576 B"), std::string::npos);

  // One repetition a side: each call's time is no sample; nothing is tested,
  // with or without the calls' times recorded.
  for (bool with_call_times : {true, false}) {
    testing::SweepSpec one;
    one.with_call_times = with_call_times;
    const std::string one_base = sweep("one_base.db", one);
    one.seed = 5;
    one.slowdown = {{8, 1.5}};
    const auto blind = check(one_base, sweep("one.db", one));
    EXPECT_EQ(blind.inconclusive(), 10) << check_table_text(blind);
    EXPECT_EQ(blind.regressions(), 0) << check_table_text(blind);
  }
}

TEST_F(CheckTest, ALoadedSideIsAWarningNotARegression) {
  auto loaded = honest(2);
  loaded.load = {3.5, 2.0, 1.0, 4, 3, 4};  // 3 other runnable threads on 4 cores
  auto quiet = honest(3);
  quiet.load = {0.2, 0.1, 0.1, 1, 0, 4};
  const std::string base = db("base.db", quiet);
  auto r = check(base, db("loaded.db", loaded));
  EXPECT_EQ(r.regressions(), 0) << check_table_text(r);
  // The 2-rank cases: 3 others + 2 ranks > 4 cores; naive's one rank fits.
  ASSERT_EQ(r.warnings.size(), 3u) << check_table_text(r);
  EXPECT_EQ(r.warnings[0],
            "case per-tensor: the current run was measured on a loaded machine (5 of "
            "5 usable repetition(s): node0 at the start: 3 runnable threads of "
            "other processes + 2 of the job's > 4 cores); its timings may be the "
            "machine's, not the code's");
  EXPECT_NE(check_table_text(r).find("warning: case fused: the current run was measured"),
            std::string::npos);
  EXPECT_NE(check_markdown(r).find("- **Warning**: case overlap:"), std::string::npos);
  // The other way round, the baseline is the loaded side; quiet on both: none.
  const auto reverse = check(dir_ / "loaded.db", base);
  ASSERT_EQ(reverse.warnings.size(), 3u);
  EXPECT_NE(reverse.warnings[1].find("the baseline was measured on a loaded machine"),
            std::string::npos);
  quiet.seed = 4;
  EXPECT_TRUE(check(base, db("quiet.db", quiet)).warnings.empty());
  // A baseline file keeps it.
  save_baseline(load_check_suite(dir_ / "loaded.db", "latest"), dir_ / "loaded.json");
  EXPECT_EQ(load_baseline(dir_ / "loaded.json").find("fused")->loaded,
            load_check_suite(dir_ / "loaded.db", "latest").find("fused")->loaded);
}

// Timings on other GEMM kernels measure the kernels: refused unless allowed;
// a baseline file keeps the kernels; runs that recorded none are compared.
TEST_F(CheckTest, TimingsOnOtherKernelsAreRefusedUnlessAllowed) {
  auto haswell = honest(2);
  haswell.blas_core = "Haswell";
  auto cooperlake = honest(3);
  cooperlake.blas_core = "Cooperlake";
  const std::string base = db("haswell.db", haswell), now = db("cooperlake.db", cooperlake);
  try {
    check(base, now);
    ADD_FAILURE() << "kernels differ: expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), kExitBadInput);
    EXPECT_NE(std::string(e.what()).find("the baseline ran GEMM kernels OpenBLAS 0.3.21 Haswell, "
                                         "the current run OpenBLAS 0.3.21 Cooperlake"),
              std::string::npos)
        << e.what();
  }
  CheckOptions allow;
  allow.allow_kernel_change = true;
  const auto allowed = check(base, now, allow);
  ASSERT_FALSE(allowed.warnings.empty());
  EXPECT_NE(allowed.warnings[0].find("--allow-kernel-change"), std::string::npos);
  save_baseline(load_check_suite(base, "latest"), dir_ / "haswell.json");
  EXPECT_EQ(load_baseline(dir_ / "haswell.json").find("fused")->kernels, "OpenBLAS 0.3.21 Haswell");
  EXPECT_EQ(check(db("unrecorded.db", honest(4)), now).regressions(), 0);
  cooperlake.seed = 5;
  EXPECT_TRUE(check(now, db("same.db", cooperlake)).warnings.empty());
}

TEST_F(CheckTest, DoubledTrackedMemoryAndChangedLossesAreRegressions) {
  auto fat = honest(2);
  fat.memory_factor = 2.0;
  auto r = check(db("a.db", honest(1)), db("b.db", fat));
  const CheckRow* row = find_row(r, "fused", "tracked.activations");
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->verdict, Verdict::kRegression);
  EXPECT_NE(row->note.find("rank(s) 0,1"), std::string::npos) << row->note;
  EXPECT_EQ(find_row(r, "fused", "tracked.parameters")->verdict, Verdict::kSame);
  // Less memory is not a failure, but it is reported.
  auto r2 = check(db("c.db", fat), db("d.db", honest(1)));
  EXPECT_EQ(r2.regressions(), 0) << check_table_text(r2);
  EXPECT_EQ(find_row(r2, "fused", "tracked.activations")->verdict, Verdict::kImproved);

  auto drift = honest(2);
  drift.loss_offset = 1e-3;
  auto r3 = check(db("a.db", honest(1)), db("e.db", drift));
  EXPECT_EQ(find_row(r3, "naive", "train loss")->verdict, Verdict::kRegression);
  EXPECT_EQ(find_row(r3, "naive", "val loss")->verdict, Verdict::kRegression);
}

TEST_F(CheckTest, ACaseThatNowFailsIsARegression) {
  auto broken = honest(2);
  broken.cases[2].fail_reason = "rank 0 killed by signal 9";
  auto r = check(db("a.db", honest(1)), db("b.db", broken));
  const CheckRow* row = find_row(r, "fused", "status");
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->verdict, Verdict::kRegression);
  EXPECT_NE(row->note.find("signal 9"), std::string::npos);
}

TEST_F(CheckTest, RatioRules) {
  auto rule = parse_ratio_rule("fused/per-tensor<=1.10");
  EXPECT_EQ(rule.metric, "step_time");
  EXPECT_EQ(rule.numerator, "fused");
  EXPECT_EQ(rule.denominator, "per-tensor");
  EXPECT_TRUE(rule.at_most);
  EXPECT_DOUBLE_EQ(rule.bound, 1.10);
  auto tps = parse_ratio_rule(" tokens_per_s:overlap / naive >= 2.5");
  EXPECT_EQ(tps.metric, "tokens_per_s");
  EXPECT_EQ(tps.numerator, "overlap");
  EXPECT_FALSE(tps.at_most);
  EXPECT_EQ(parse_ratio_rule(tps.text()).text(), tps.text());
  for (const char* bad : {"fused<=1", "fused/per-tensor", "fused/per-tensor<=x", "a/<=1",
                          "latency:a/b<=1", "a/b<=-1"}) {
    EXPECT_THROW(parse_ratio_rule(bad), Error) << bad;
  }
  auto current = load_check_suite(db("a.db", honest(1)), "latest");
  CheckOptions o;
  // fused ~0.05 s, per-tensor ~0.06 s: ratio ~0.83.
  o.ratios = {parse_ratio_rule("fused/per-tensor<=0.9"), parse_ratio_rule("per-tensor/fused<=1.1")};
  auto r = run_check(nullptr, current, o);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].verdict, Verdict::kSame);
  EXPECT_EQ(r.rows[1].verdict, Verdict::kRegression);
  o.ratios = {parse_ratio_rule("fused/ring<=1")};
  try {
    run_check(nullptr, current, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no case 'ring'"), std::string::npos) << e.what();
  }
}

TEST_F(CheckTest, BaselineJsonRoundTripsAndNewerSchemaIsRefused) {
  auto suite = load_check_suite(db("a.db", honest(1)), "latest");
  suite.ratios = {parse_ratio_rule("fused/per-tensor<=0.9")};
  save_baseline(suite, dir_ / "b.json");
  auto back = load_baseline(dir_ / "b.json");
  ASSERT_EQ(back.cases.size(), suite.cases.size());
  for (size_t i = 0; i < back.cases.size(); ++i) {
    EXPECT_EQ(back.cases[i].name, suite.cases[i].name);
    EXPECT_EQ(back.cases[i].config, suite.cases[i].config);
    EXPECT_EQ(back.cases[i].deterministic.counters, suite.cases[i].deterministic.counters);
    EXPECT_EQ(back.cases[i].timings.step_time_median_s, suite.cases[i].timings.step_time_median_s);
    EXPECT_EQ(back.cases[i].deterministic.train_loss, suite.cases[i].deterministic.train_loss);
  }
  ASSERT_EQ(back.ratios.size(), 1u);
  EXPECT_EQ(run_check(&back, suite, {}).regressions(), 0);

  auto j = nlohmann::json::parse(read(dir_ / "b.json"));
  j["schema"] = "trainscope.baseline/2";
  try {
    baseline_from_json(j, "new.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("new.json: baseline schema 'trainscope.baseline/2' is "
                                         "newer"),
              std::string::npos)
        << e.what();
  }
  j["schema"] = "trainscope.baseline/1";
  j["cases"][1]["deterministic"]["counters"]["comm.calls"][0] = "many";
  try {
    baseline_from_json(j, "x.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cases[1].deterministic.counters.comm.calls[0]"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace trainscope::check
