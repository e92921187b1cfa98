// The PyTorch peer of a suite case (engine = "pytorch"): its launch (the
// export before the job, the peer under the same mpirun), what it skips, and
// a vs-pytorch case run by the runner end to end when PyTorch is here.
#include "suites/pytorch_peer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "profiler/supervise.h"
#include "suite_parse.h"

namespace trainscope::suites {
namespace {

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += a + " ";
  return s;
}

PlanContext test_context() {
  PlanContext ctx;
  ctx.trainscope_binary = "/bin/trainscope";
  ctx.mpirun = "/usr/bin/mpirun";
  ctx.slots = 2;
  return ctx;
}

TEST(PytorchPeer, ExportsTheNaiveRunThenRunsThePeerUnderTheSameMpirun) {
  const Suite s = parse_test_suite(
      "name = \"x\"\n[base]\nmodel = \"tiny\"\nsteps = 7\nbatch = 4\n"
      "[[case]]\nengine = \"pytorch\"\nmode = \"sharded\"\nranks = 2\nbucket_mb = 4\n"
      "comm_dtype = \"bf16\"\nthreads = 1\n"
      "[[case]]\nengine = \"pytorch\"\nmode = \"naive\"\n");
  const LaunchPlan p = plan_case(s, s.cases[0], test_context(), "/tmp/c.json");
  const std::string prepare = joined(p.prepare), cmd = joined(p.argv);
  EXPECT_EQ(p.prepare.front(), "/bin/trainscope");
  EXPECT_NE(prepare.find("--model tiny "), std::string::npos) << prepare;
  EXPECT_NE(prepare.find("--steps 7 "), std::string::npos) << prepare;
  EXPECT_NE(prepare.find("--mode naive "), std::string::npos) << prepare;
  EXPECT_NE(prepare.find("--export-run /tmp/c-export "), std::string::npos) << prepare;
  for (const char* gone : {"--summary", "--status-dir", "--comm-dtype", "--mode sharded"}) {
    EXPECT_EQ(prepare.find(gone), std::string::npos) << gone << ": " << prepare;
  }
  EXPECT_EQ(p.argv[0], "/usr/bin/mpirun");
  EXPECT_NE(cmd.find("-np 2 "), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("-x GLOO_SOCKET_IFNAME=lo "), std::string::npos) << cmd;
  EXPECT_EQ(cmd.find("/bin/trainscope"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find(pytorch_peer_script().string() + " --run /tmp/c-export --mode sharded "),
            std::string::npos)
      << cmd;
  for (const char* flag : {"--bucket-mb 4 ", "--comm-dtype bf16 ", "--threads 1 ",
                           "--summary /tmp/c.json ", "--rendezvous /tmp/c-store "}) {
    EXPECT_NE(cmd.find(flag), std::string::npos) << flag << ": " << cmd;
  }
  // One process: no mpirun, no rendezvous, gloo's interface in the environment.
  const LaunchPlan one = plan_case(s, s.cases[1], test_context(), "/tmp/d.json");
  EXPECT_FALSE(one.uses_mpirun);
  EXPECT_EQ(joined(one.argv).find("--rendezvous"), std::string::npos);
  EXPECT_NE(std::find(one.env.begin(), one.env.end(), "GLOO_SOCKET_IFNAME=lo"), one.env.end());
  // A trainscope case has nothing to prepare.
  const Suite t = parse_test_suite("name = \"x\"\n[[case]]\nmode = \"naive\"\n");
  EXPECT_TRUE(plan_case(t, t.cases[0], test_context(), "/tmp/e.json").prepare.empty());
}

TEST(PytorchPeer, SettingsItHasNoCounterpartForAreSkipsWithTheReason) {
  const Suite s = parse_test_suite(
      "name = \"x\"\n[base]\nengine = \"pytorch\"\nranks = 2\n"
      "[[case]]\nmode = \"duplicated\"\n"
      "[[case]]\nmode = \"sharded\"\nzero = 1\n"
      "[[case]]\nmode = \"sharded\"\nallreduce = \"shm\"\n"
      "[[case]]\nmode = \"sharded\"\ntransport = \"tcp\"\n"
      "[[case]]\nmode = \"sharded\"\ngemm = \"openblas\"\n"
      "[[case]]\nmode = \"sharded\"\nprecision = \"bf16\"\n");
  // Each named by its suite key; gemm was run silently before (the peer's
  // GEMMs are PyTorch's own), as would any option added without a word
  // about the peer (options/train_option_rows.cpp: opt-in).
  const char* expected[] = {"mode = duplicated: PyTorch has no duplicated mode",
                            "zero = 1: the PyTorch peer runs plain DDP",
                            "allreduce = shm",
                            "gloo",
                            "gemm = openblas: the PyTorch peer has no counterpart",
                            "precision = bf16: the PyTorch peer trains in fp32"};
  ASSERT_EQ(s.cases.size(), std::size(expected));
  for (std::size_t i = 0; i < s.cases.size(); ++i) {
    EXPECT_NE(s.cases[i].skip_reason.find(expected[i]), std::string::npos)
        << s.cases[i].name << ": " << s.cases[i].skip_reason;
  }
  const Suite contiguous = parse_test_suite(
      "name = \"x\"\n[base]\nengine = \"pytorch\"\nranks = 2\nshard = \"contiguous\"\n"
      "[[case]]\nmode = \"sharded\"\n");
  EXPECT_NE(contiguous.cases[0].skip_reason.find("strided"), std::string::npos)
      << contiguous.cases[0].skip_reason;
  // The same settings on trainscope cases are no reason to skip.
  const Suite t =
      parse_test_suite("name = \"x\"\n[base]\nranks = 2\n[[case]]\nmode = \"duplicated\"\n");
  EXPECT_EQ(t.cases[0].skip_reason, "");
}

// DDP's bf16_compress_hook needs gloo to sum bf16, which PyTorch 1.13's does
// not: skipped there with the peer's own words, run where gloo can.
TEST(PytorchPeer, Bf16GradientsAreSkippedWhereGlooCannotSumThem) {
  if (pytorch_python().empty()) GTEST_SKIP() << "no Python here imports torch";
  SpawnOptions check;
  check.argv = {pytorch_python(), pytorch_peer_script().string(), "--check-bf16-allreduce"};
  check.env = {"GLOO_SOCKET_IFNAME=lo"};
  const profiler::CompletedRun r = profiler::run_to_completion(check, 60);
  const Suite s = parse_test_suite(
      "name = \"x\"\n[base]\nengine = \"pytorch\"\nmode = \"sharded\"\nranks = 2\n"
      "[[case]]\ncomm_dtype = \"bf16\"\n[[case]]\ncomm_dtype = \"fp32\"\n");
  if (r.exit_code == 0) {
    EXPECT_EQ(s.cases[0].skip_reason, "");
  } else {
    EXPECT_NE(s.cases[0].skip_reason.find("bf16_compress_hook"), std::string::npos)
        << s.cases[0].skip_reason;
    EXPECT_NE(r.out.find(s.cases[0].skip_reason), std::string::npos) << r.out;
  }
  EXPECT_EQ(s.cases[1].skip_reason, "");
}

TEST(PytorchPeer, EngineIsAnAxisThatNamesItsCases) {
  const Suite s = parse_test_suite(
      "name = \"x\"\n[grid]\nengine = [\"trainscope\", \"pytorch\"]\nmode = [\"naive\"]\n");
  ASSERT_EQ(s.cases.size(), 2u);
  EXPECT_NE(s.cases[0].name.find("trainscope"), std::string::npos) << s.cases[0].name;
  EXPECT_NE(s.cases[1].name.find("pytorch"), std::string::npos) << s.cases[1].name;
  EXPECT_EQ(s.cases[1].to_json()["engine"], "pytorch");
  EXPECT_NE(suite_error("name = \"x\"\n[[case]]\nengine = \"jax\"\n")
                .find("(expected trainscope, pytorch)"),
            std::string::npos);
}

}  // namespace
}  // namespace trainscope::suites
