// Suite TOML parsing (errors with file:line), grid expansion, collapsing and
// skipping, explicit cases, and that every built-in suite parses.
#include "suites/suite_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "kernels/blas_core.h"
#include "base/check.h"
#include "suites/launch_plan.h"
#include "tests/suites/suite_parse.h"
#include "tests/temp_dir.h"
#include "training/model_config.h"

namespace trainscope::suites {
namespace {

TEST(SuiteConfig, BadSyntaxNamesFileAndLine) {
  const std::string e = suite_error("name = \"x\"\n[grid]\nmode = [\"naive\",\n");
  EXPECT_NE(e.find("t.toml:"), std::string::npos) << e;
  EXPECT_NE(e.find("invalid TOML"), std::string::npos) << e;
}

TEST(SuiteConfig, UnknownTopLevelKeyNamesLine) {
  const std::string e = suite_error("name = \"x\"\nrepetitons = 2\n[grid]\nranks = [1]\n");
  EXPECT_NE(e.find("t.toml:2:"), std::string::npos) << e;
  EXPECT_NE(e.find("repetitons"), std::string::npos) << e;
}

TEST(SuiteConfig, UnknownGridAxisNamesLine) {
  const std::string e = suite_error("name = \"x\"\n[grid]\nranks = [1]\nmodes = [\"naive\"]\n");
  EXPECT_NE(e.find("t.toml:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("'modes'"), std::string::npos) << e;
}

TEST(SuiteConfig, WrongTypeNamesLine) {
  const std::string e = suite_error("name = \"x\"\n[base]\nsteps = \"ten\"\n[grid]\nranks = [1]\n");
  EXPECT_NE(e.find("t.toml:3:"), std::string::npos) << e;
  EXPECT_NE(e.find("'steps' must be an integer"), std::string::npos) << e;
}

TEST(SuiteConfig, UnknownModeNamesLineAndChoices) {
  const std::string e = suite_error("name = \"x\"\n[grid]\nmode = [\"naive\",\n  \"zero3\"]\n");
  EXPECT_NE(e.find("t.toml:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("mode: unknown data mode 'zero3'"), std::string::npos) << e;
  EXPECT_NE(e.find("sharded"), std::string::npos) << e;
}

TEST(SuiteConfig, MissingNameAndNoCases) {
  EXPECT_NE(suite_error("[grid]\nranks = [1]\n").find("missing required key 'name'"),
            std::string::npos);
  EXPECT_NE(suite_error("name = \"x\"\n").find("neither a [grid] nor [[case]]"), std::string::npos);
}

TEST(SuiteConfig, StepsMustExceedWarmup) {
  const std::string e =
      suite_error("name = \"x\"\n[base]\nsteps = 2\nwarmup_steps = 2\n[grid]\nranks = [1]\n");
  EXPECT_NE(e.find("t.toml:3:"), std::string::npos) << e;
}

TEST(SuiteConfig, LinksOnNonTcpCaseIsAnError) {
  const std::string e = suite_error(
      "name = \"x\"\n[[case]]\nranks = 2\nmode = \"sharded\"\ntransport = \"shm\"\nlinks = 4\n");
  EXPECT_NE(e.find("t.toml:6:"), std::string::npos) << e;
  EXPECT_NE(e.find("tcp transport only"), std::string::npos) << e;
}

TEST(SuiteConfig, MoreThanFourTcpLinksAreSkippedWithTheReason) {
  const Suite s = parse_test_suite(
      "name = \"x\"\n[base]\nranks = 2\nmode = \"sharded\"\n"
      "transport = \"tcp\"\n[grid]\nlinks = [4, 8]\n");
  ASSERT_EQ(s.cases.size(), 2u);
  EXPECT_EQ(s.cases[0].skip_reason, "");
  EXPECT_NE(s.cases[1].skip_reason.find("btl_tcp_links 8 hangs Open MPI"), std::string::npos)
      << s.cases[1].skip_reason;
}

TEST(SuiteConfig, OutOfRangeAndNonFiniteValuesNameTheLine) {
  struct Bad {
    std::string text, where, what;
  };
  for (const Bad& b : std::vector<Bad>{
           {"name = \"x\"\n[grid]\nranks = [4294967298]\n", "t.toml:3:", "at most"},
           {"name = \"x\"\nrepetitions = 4294967296\n[grid]\nranks = [1]\n",
            "t.toml:2:", "at most"},
           {"name = \"x\"\n[base]\nbucket_mb = nan\n[grid]\nranks = [2]\n", "t.toml:3:", "finite"},
           {"name = \"x\"\ntimeout_s = inf\n[grid]\nranks = [1]\n", "t.toml:2:", "finite"},
           {"name = \"x\"\ntcp_interface = \"\"\n[grid]\nranks = [1]\n", "t.toml:2:", "interface"},
           {"name = \"x\"\nbind_to = \"banana\"\n[grid]\nranks = [1]\n", "t.toml:2:", "banana"},
           {"name = \"x\"\nkind = \"allreduce\"\n[grid]\nthreads = [1, 2]\n",
            "t.toml:4:", "threads"},
       }) {
    const std::string e = suite_error(b.text);
    EXPECT_NE(e.find(b.where), std::string::npos) << b.text << " -> " << e;
    EXPECT_NE(e.find(b.what), std::string::npos) << b.text << " -> " << e;
  }
}

TEST(SuiteConfig, MissingModelConfigNamesLine) {
  const std::string e =
      suite_error("name = \"x\"\n[base]\nmodel = \"nope/none.json\"\n[grid]\nranks = [1]\n");
  EXPECT_NE(e.find("t.toml:3:"), std::string::npos) << e;
  EXPECT_NE(e.find("none.json"), std::string::npos) << e;
}

TEST(SuiteConfig, GridIsCartesianProductWithSkips) {
  const Suite s = parse_test_suite(
      "name = \"x\"\n[base]\nbatch = 4\n[grid]\nmode = [\"naive\", \"sharded\"]\nranks = [1, 2, "
      "3]\n");
  ASSERT_EQ(s.cases.size(), 6u);
  int skipped = 0;
  for (const auto& c : s.cases) {
    if (c.train.data.data_mode == options::DataMode::kNaive && c.ranks > 1) {
      EXPECT_NE(c.skip_reason.find("naive runs one process"), std::string::npos);
      ++skipped;
    } else if (c.ranks == 3) {
      EXPECT_NE(c.skip_reason.find("not divisible by 3"), std::string::npos);
      ++skipped;
    } else {
      EXPECT_EQ(c.skip_reason, "") << c.name;
    }
  }
  EXPECT_EQ(skipped, 3);  // naive r2, naive r3, sharded r3
}

// A 526-byte suite whose grid names 30^4 = 810,000 combinations: expanding
// them took longer than tests/fuzz/suite_fuzz's 10 s per input (and grows
// with every axis until memory runs out). Now an error before expanding.
TEST(SuiteConfig, GridWithTooManyCombinationsIsAnError) {
  std::string one_to_30 = "[1";
  for (int i = 2; i <= 30; ++i) one_to_30 += ", " + std::to_string(i);
  one_to_30 += "]";
  const std::string e = suite_error("name = \"big\"\n[grid]\nranks = " + one_to_30 +
                                    "\nthreads = " + one_to_30 + "\nbucket_mb = " + one_to_30 +
                                    "\nlinks = " + one_to_30 + "\ntransport = [\"tcp\"]\n");
  EXPECT_NE(e.find("t.toml:2:"), std::string::npos) << e;
  EXPECT_NE(e.find("810000 combinations"), std::string::npos) << e;
}

TEST(SuiteConfig, InapplicableAxesCollapse) {
  const Suite s = parse_test_suite(
      "name = \"x\"\n[base]\nmode = \"sharded\"\nranks = 2\n[grid]\n"
      "reduce = [\"per-tensor\", \"fused\"]\nbucket_mb = [1, 0]\n"
      "transport = [\"shm\", \"tcp\"]\nlinks = [1, 2]\n");
  // per-tensor x (shm + 2 tcp) = 3; fused x 2 buckets x 3 = 6.
  EXPECT_EQ(s.cases.size(), 9u);
  for (const auto& c : s.cases) {
    if (c.train.reduce == options::ReduceStrategy::kPerTensor) {
      EXPECT_FALSE(c.given.contains("bucket_mb")) << c.name;
      EXPECT_TRUE(c.to_json()["bucket_mb"].is_null()) << c.name;
    }
    if (c.transport == options::Transport::kShm) {
      EXPECT_EQ(c.links, 0) << c.name;
    }
  }
  const auto n = case_names(s);
  EXPECT_NE(std::find(n.begin(), n.end(), "sharded-r2-fused-whole-tcp-l2"), n.end());
  EXPECT_NE(std::find(n.begin(), n.end(), "sharded-r2-per-tensor-shm"), n.end());
}

TEST(SuiteConfig, ExplicitCasesOverrideBase) {
  const Suite s = parse_test_suite(
      "name = \"x\"\n[base]\nsteps = 5\n[[case]]\nname = \"one\"\n[[case]]\nmode = \"sharded\"\n"
      "ranks = 2\nreduce = \"overlap\"\nbucket_mb = 4\n");
  ASSERT_EQ(s.cases.size(), 2u);
  EXPECT_EQ(s.cases[0].name, "one");
  EXPECT_EQ(s.cases[1].name, "sharded-r2-overlap-b4");
  EXPECT_EQ(s.cases[1].train.steps, 5);
  EXPECT_EQ(s.cases[1].train.bucket_mb, 4.0);
  EXPECT_TRUE(s.cases[1].given.contains("bucket_mb"));
  EXPECT_NE(suite_error("name = \"x\"\n[[case]]\nname = \"a\"\n[[case]]\nname = \"a\"\n")
                .find("duplicate case 'a'"),
            std::string::npos);
}

TEST(SuiteConfig, ACaseMayHaveItsOwnExtraArgs) {
  const Suite s = parse_test_suite(
      "name = \"x\"\n[base]\nextra_args = [\"--log-every\", \"5\"]\n[[case]]\nname = \"even\"\n"
      "[[case]]\nname = \"slow\"\nextra_args = [\"--inject-delay\", \"1:50\"]\n");
  ASSERT_EQ(s.cases.size(), 2u);
  EXPECT_EQ(s.cases[0].extra_args, (std::vector<std::string>{"--log-every", "5"}));
  EXPECT_EQ(s.cases[1].extra_args, (std::vector<std::string>{"--inject-delay", "1:50"}));
  // A train flag means nothing to an all-reduce sweep.
  EXPECT_NE(suite_error("name = \"x\"\nkind = \"allreduce\"\n[[case]]\nranks = 2\n"
                        "extra_args = [\"--x\"]\n")
                .find("unknown key 'extra_args' in [[case]]"),
            std::string::npos);
}

TEST(SuiteConfig, ModelPathResolvedAgainstSuiteDir) {
  const Suite s = parse_test_suite("name = \"x\"\n[grid]\nmodel = [\"tiny\", \"narrow24.json\"]\n");
  ASSERT_EQ(s.cases.size(), 2u);
  EXPECT_EQ(s.cases[0].train.model, "tiny");
  EXPECT_TRUE(std::filesystem::path(s.cases[1].train.model).is_absolute());
  EXPECT_NE(s.cases[1].name.find("narrow24"), std::string::npos);
}

TEST(SuiteConfig, AllReduceSuiteKeys) {
  const Suite s = parse_test_suite(
      "name = \"x\"\nkind = \"allreduce\"\n[base]\nranks = 2\nmax_bytes = 1024\n[grid]\n"
      "transport = [\"tcp\"]\nlinks = [1, 4]\n");
  ASSERT_EQ(s.cases.size(), 2u);
  EXPECT_EQ(s.cases[1].kind, CaseKind::kAllReduce);
  EXPECT_EQ(s.cases[1].sweep.max_bytes, 1024);
  EXPECT_EQ(s.cases[1].name, "allreduce-r2-tcp-l4");
  // Training keys are not allowed in an allreduce suite.
  EXPECT_NE(
      suite_error(
          "name = \"x\"\nkind = \"allreduce\"\n[base]\nmodel = \"seed\"\n[grid]\nranks = [2]\n")
          .find("t.toml:4:"),
      std::string::npos);
}

TEST(SuiteConfig, EveryBuiltinSuiteParses) {
  const auto builtins = builtin_suite_names();
  for (const char* expected : {"allreduce", "allreduce-algorithms", "default", "dp-modes",
                               "finetune", "machines", "precision", "reductions", "replay",
                               "scaling", "smoke", "stragglers", "tcp-links", "vs-pytorch"}) {
    EXPECT_NE(std::find(builtins.begin(), builtins.end(), expected), builtins.end()) << expected;
  }
  for (const auto& name : builtins) {
    const Suite s = resolve_suite(name);
    EXPECT_FALSE(s.cases.empty()) << name;
    EXPECT_FALSE(s.description.empty()) << name;
  }
  EXPECT_THROW(resolve_suite("no-such-suite"), Error);
}

// Hosts, cores per host and links: one rank per host unless ranks says
// otherwise; the link collapses where there is one host; a machine too small
// for the hosts' cores skips the case with the reason.
}  // namespace
}  // namespace trainscope::suites
