// `trainscope check` end to end: exit codes 0 / 1 / 2, Markdown, baseline
// files, thresholds, ratio rules, input errors, inconclusive gates.
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "check/baseline.h"
#include "tests/check/check_fixture.h"

namespace trainscope::check {
namespace {

TEST_F(CheckTest, CliExitCodesAndMarkdown) {
  const std::string a = db("a.db", honest(1)), b = db("b.db", honest(2));
  auto slow_spec = honest(3);
  slow_spec.slowdown = 1.5;
  const std::string slow = db("slow.db", slow_spec);
  auto fat_spec = honest(3);
  fat_spec.memory_factor = 2;
  const std::string fat = db("fat.db", fat_spec);

  auto pass = run_trainscope("check --db " + q(b) + " --baseline " + q(a) + " --markdown " +
                             q(dir_ / "pass.md"));
  EXPECT_EQ(pass.exit_code, 0) << pass.output;
  EXPECT_NE(pass.output.find("0 regression(s)"), std::string::npos) << pass.output;
  const std::string md = read(dir_ / "pass.md");
  EXPECT_NE(md.find("| case | metric | baseline | current | change | p | detectable | verdict | "
                    "note |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| fused | step time median |"), std::string::npos) << md;

  auto regressed = run_trainscope("check --db " + q(slow) + " --baseline " + q(a) + " --markdown " +
                                  q(dir_ / "slow.md"));
  EXPECT_EQ(regressed.exit_code, 1) << regressed.output;
  EXPECT_NE(regressed.output.find("REGRESSION"), std::string::npos);
  EXPECT_NE(read(dir_ / "slow.md").find("**REGRESSION**"), std::string::npos);

  auto memory = run_trainscope("check --db " + q(fat) + " --baseline " + q(a));
  EXPECT_EQ(memory.exit_code, 1) << memory.output;
  EXPECT_NE(memory.output.find("tracked.activations"), std::string::npos);

  // A generous threshold lets the slowdown through; memory is still exact.
  EXPECT_EQ(
      run_trainscope("check --db " + q(slow) + " --baseline " + q(a) + " --threshold 80").exit_code,
      0);
}

TEST_F(CheckTest, CliBaselineFileAndRatioRules) {
  const std::string a = db("a.db", honest(1)), b = db("b.db", honest(2));
  auto saved = run_trainscope("check --db " + q(a) + " --save-baseline " + q(dir_ / "base.json") +
                              " --ratio 'fused/per-tensor<=0.95'");
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  auto ok = run_trainscope("check --db " + q(b) + " --baseline " + q(dir_ / "base.json"));
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("ratio of step_time"), std::string::npos) << ok.output;

  auto ratio_only = run_trainscope("check --db " + q(b) + " --ratio 'per-tensor/fused<=1.05'");
  EXPECT_EQ(ratio_only.exit_code, 1) << ratio_only.output;
  auto tps = run_trainscope("check --db " + q(b) + " --ratio 'tokens_per_s:fused/naive>=2'");
  EXPECT_EQ(tps.exit_code, 0) << tps.output;

  // The same database as its own baseline: an earlier suite of the same name.
  build_suite_db(dir_ / "a.db", honest(5));
  auto same = run_trainscope("check --db " + q(dir_ / "a.db") + " --baseline " + q(dir_ / "a.db"));
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_NE(same.output.find("suite 2 vs baseline"), std::string::npos) << same.output;
}

TEST_F(CheckTest, CliBadInputExitsTwoNamingTheCulprit) {
  const std::string a = db("a.db", honest(1));
  auto expect_error = [&](const std::string& args, const std::string& message) {
    auto r = run_trainscope(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
  };
  expect_error("check --db " + q(a) + " --suite 9 --baseline " + q(a), "no suite with id 9");

  auto other = honest(2);
  other.batch = 8;
  const std::string b = db("b.db", other);
  expect_error("check --db " + q(b) + " --baseline " + q(a),
               "case 'naive' of suite 'reductions': configuration differs from the baseline at "
               "'/config/batch': baseline 4, current 8");

  auto renamed = honest(2);
  renamed.name = "dp-modes";
  expect_error("check --db " + q(db("c.db", renamed)) + " --baseline " + q(a),
               "no suite named 'dp-modes'");

  auto fewer = honest(2);
  fewer.cases.pop_back();
  expect_error("check --db " + q(db("d.db", fewer)) + " --baseline " + q(a),
               "case 'overlap' of suite 'reductions' is in the baseline");

  SuiteSpec empty;
  empty.cases.clear();
  expect_error("check --db " + q(db("e.db", empty)) + " --baseline " + q(a), "has no cases");

  ASSERT_EQ(
      run_trainscope("check --db " + q(a) + " --save-baseline " + q(dir_ / "x.json")).exit_code, 0);
  auto j = nlohmann::json::parse(read(dir_ / "x.json"));
  j["schema"] = "trainscope.baseline/7";
  std::ofstream(dir_ / "x.json") << j.dump();
  expect_error("check --db " + q(a) + " --baseline " + q(dir_ / "x.json"),
               "baseline schema 'trainscope.baseline/7' is newer");
  expect_error("check --db " + q(dir_ / "missing.db") + " --baseline " + q(a), "missing.db");
  expect_error("check --db " + q(a), "nothing to check");
  expect_error("check --db " + q(a) + " --ratio 'fused/ring<=1'", "has no case 'ring'");
  expect_error("check --db " + q(a) + " --ratio 'fused-per-tensor<=1'", "no '/'");
}

// A gate that cannot detect a slowdown does not pass silently.
TEST_F(CheckTest, CliInconclusiveExitsTwoUnlessAllowed) {
  auto base = honest(1), cur = honest(2);
  base.repetitions = cur.repetitions = 1;
  const std::string a = db("a.db", base), b = db("b.db", cur);
  auto blind = run_trainscope("check --db " + q(b) + " --baseline " + q(a));
  EXPECT_EQ(blind.exit_code, 2) << blind.output;
  EXPECT_NE(blind.output.find("INCONCLUSIVE"), std::string::npos) << blind.output;
  EXPECT_NE(blind.output.find("4 timing comparison(s) are INCONCLUSIVE"), std::string::npos)
      << blind.output;
  for (const char* flag : {" --allow-inconclusive", " --allow-too-few-samples"}) {
    auto allowed = run_trainscope("check --db " + q(b) + " --baseline " + q(a) + flag);
    EXPECT_EQ(allowed.exit_code, 0) << flag << "\n" << allowed.output;
  }
  // A regression found elsewhere is still a regression.
  auto fat = cur;
  fat.memory_factor = 2;
  auto regressed = run_trainscope("check --db " + q(db("fat.db", fat)) + " --baseline " + q(a));
  EXPECT_EQ(regressed.exit_code, 1) << regressed.output;
}

// --save-baseline --threshold stores the gate's threshold; later checks of
// that baseline apply it unless given their own.
TEST_F(CheckTest, CliTheBaselineCarriesTheThreshold) {
  const std::string a = db("a.db", honest(1));
  auto slow_spec = honest(3);
  slow_spec.slowdown = 1.5;
  const std::string slow = db("slow.db", slow_spec);
  const std::string file = (dir_ / "base.json").string();
  auto saved =
      run_trainscope("check --db " + q(a) + " --save-baseline " + q(file) + " --threshold 80");
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  EXPECT_NE(saved.output.find("threshold 80%"), std::string::npos) << saved.output;
  EXPECT_EQ(load_baseline(file).threshold_pct, 80.0);
  auto lax = run_trainscope("check --db " + q(slow) + " --baseline " + q(file));
  EXPECT_EQ(lax.exit_code, 0) << lax.output;
  EXPECT_NE(lax.output.find("(threshold 80%, alpha 0.05)"), std::string::npos) << lax.output;
  auto strict =
      run_trainscope("check --db " + q(slow) + " --baseline " + q(file) + " --threshold 10");
  EXPECT_EQ(strict.exit_code, 1) << strict.output;
  // A database as the baseline has no threshold of its own: the default.
  auto by_db = run_trainscope("check --db " + q(slow) + " --baseline " + q(a));
  EXPECT_NE(by_db.output.find("(threshold 5%, alpha 0.05)"), std::string::npos) << by_db.output;
}

}  // namespace
}  // namespace trainscope::check
