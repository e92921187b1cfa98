// The command line a case launches (mpirun, transport, hosts, algorithms)
// and the runner's result table.
#include "suites/runner.h"
#include "suites/virtual_cluster.h"

#include <algorithm>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/atomic_file.h"
#include "base/check.h"
#include "results/results_db.h"
#include "suites/case_skips.h"

namespace trainscope::suites {
namespace {

TEST(Plan, MpirunFlagsTransportAndOversubscribe) {
  Suite s = parse_suite(
      "name = \"x\"\n[[case]]\nmode = \"sharded\"\nranks = 4\ntransport = \"tcp\"\nlinks = 2\n"
      "[[case]]\nname = \"one\"\n",
      "p.toml", ".");
  PlanContext ctx;
  ctx.trainscope_binary = "/bin/trainscope";
  ctx.mpirun = "/usr/bin/mpirun";
  ctx.slots = 2;
  ctx.as_root = true;
  const LaunchPlan p = plan_case(s, s.cases[0], ctx, "/tmp/s.json");
  const std::string cmd = [&] {
    std::string c;
    for (const auto& a : p.argv) c += a + " ";
    return c;
  }();
  EXPECT_TRUE(p.uses_mpirun);
  EXPECT_EQ(p.argv[0], "/usr/bin/mpirun");
  EXPECT_NE(cmd.find("-np 4 "), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("--oversubscribe"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("--bind-to none"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("--mca btl tcp,self"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("--mca btl_tcp_links 2"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("--mca btl_tcp_if_include lo"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("--mca oob_tcp_if_include lo"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("--summary /tmp/s.json"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("--status-dir /tmp/s-status "), std::string::npos) << cmd;
  EXPECT_EQ(p.env.size(), 2u);
  EXPECT_EQ(p.transport["btl_tcp_links"], "2");

  ctx.slots = 8;
  ctx.as_root = false;
  const LaunchPlan q = plan_case(s, s.cases[0], ctx, "/tmp/s.json");
  for (const auto& a : q.argv) EXPECT_NE(a, "--oversubscribe");
  EXPECT_TRUE(q.env.empty());

  const LaunchPlan one = plan_case(s, s.cases[1], ctx, "/tmp/s.json");
  EXPECT_FALSE(one.uses_mpirun);
  EXPECT_EQ(one.argv[0], "/bin/trainscope");
}

// One host's cores: the job runs on the first cores_per_host CPUs this
// process may use, and a case's own tcp_interface pins its TCP traffic.
TEST(Plan, CoresPerHostPinsTheJobAndACaseMayNameItsInterface) {
  Suite s = parse_suite(
      "name = \"x\"\n[[case]]\nmode = \"sharded\"\nranks = 2\ncores_per_host = 1\n"
      "tcp_interface = \"eth7\"\n",
      "p.toml", ".");
  PlanContext ctx;
  ctx.trainscope_binary = "/bin/trainscope";
  ctx.mpirun = "/usr/bin/mpirun";
  const LaunchPlan p = plan_case(s, s.cases[0], ctx, "/tmp/s.json");
  ASSERT_GE(p.argv.size(), 4u);
  EXPECT_EQ(p.argv[0], "taskset");
  EXPECT_EQ(p.argv[2], std::to_string(allowed_cpus().front()));
  EXPECT_EQ(p.argv[3], "/usr/bin/mpirun");
  EXPECT_EQ(p.transport["btl_tcp_if_include"], "eth7");
  ctx.tcp_interface = "lo";  // the runner's --tcp-interface wins
  EXPECT_EQ(plan_case(s, s.cases[0], ctx, "/tmp/s.json").transport["oob_tcp_if_include"], "lo");
}

// One host at a CPU share, no cluster: the whole job under the quota
// (scripts/cpu-share-run.sh), pinned inside it; without a share, no wrapper.
TEST(Plan, AOneHostCaseAtAShareRunsUnderTheQuota) {
  Suite s = parse_suite(
      "name = \"x\"\n[[case]]\nname = \"q\"\nmode = \"naive\"\ncores_per_host = 1\n"
      "cpu_share = 0.25\n[[case]]\nname = \"full\"\nmode = \"naive\"\ncores_per_host = 1\n",
      "p.toml", ".");
  PlanContext ctx;
  ctx.trainscope_binary = "/bin/trainscope";
  const LaunchPlan p = plan_case(s, s.cases[0], ctx, "/tmp/s.json");
  ASSERT_GE(p.argv.size(), 7u);
  EXPECT_EQ(p.argv[0], (netns_scripts_dir() / "cpu-share-run.sh").string());
  EXPECT_EQ(p.argv[1], "0.25");
  EXPECT_EQ(p.argv[2], "--");
  EXPECT_EQ(p.argv[3], "taskset");
  EXPECT_EQ(p.argv[6], "/bin/trainscope");
  EXPECT_EQ(plan_case(s, s.cases[1], ctx, "/tmp/s.json").argv[0], "taskset");
  EXPECT_EQ(skip_reason(s.cases[0]), "");
  // The quota is one core's, for one process: more ranks or cores are skipped, saying so.
  const Suite two = parse_suite(
      "name = \"y\"\n[[case]]\nmode = \"sharded\"\nranks = 2\ncpu_share = 0.5\n", "q.toml", ".");
  EXPECT_NE(skip_reason(two.cases[0]).find("cpu_share 0.5 on one host is a quota of one core"),
            std::string::npos)
      << skip_reason(two.cases[0]);
  // Unpinned (cores_per_host 0), its threads would be one per core under one core's quota.
  const Suite unpinned =
      parse_suite("name = \"y\"\n[[case]]\nmode = \"naive\"\ncpu_share = 0.5\n", "q.toml", ".");
  EXPECT_NE(skip_reason(unpinned.cases[0]).find("give it ranks = 1 and cores_per_host = 1"),
            std::string::npos)
      << skip_reason(unpinned.cases[0]);
}

// Several hosts: one rank per host in turn (--map-by node), not the first
// host's slots filled first; the hosts pin their own cores, not taskset.
TEST(Plan, RanksOfSeveralHostsGoRoundTheHosts) {
  Suite s = parse_suite(
      "name = \"x\"\n[[case]]\nmode = \"sharded\"\nhosts = 2\nranks = 4\n"
      "cores_per_host = 1\n",
      "p.toml", ".");
  PlanContext ctx;
  ctx.trainscope_binary = "/bin/trainscope";
  ctx.mpirun = "/usr/bin/mpirun";
  ctx.hostfile = "/tmp/hosts";
  ctx.slots = 2;
  const LaunchPlan p = plan_case(s, s.cases[0], ctx, "/tmp/s.json");
  const std::string line = shell_join(p.argv);
  EXPECT_EQ(p.argv[0], "/usr/bin/mpirun") << line;
  EXPECT_NE(line.find(" --map-by node "), std::string::npos) << line;
  EXPECT_NE(line.find(" --oversubscribe "), std::string::npos) << line;
  s = parse_suite("name = \"x\"\n[[case]]\nmode = \"sharded\"\nranks = 2\n", "p.toml", ".");
  EXPECT_EQ(shell_join(plan_case(s, s.cases[0], ctx, "/tmp/s.json").argv).find("--map-by"),
            std::string::npos);
}

// The all-reduce settings reach the command only when not the default: an
// Open MPI algorithm as mpirun's MCA pair (recorded with the transport),
// --allreduce and --zero as trainscope's flags.
TEST(Plan, AllReduceAlgorithmsAndZeroReachTheCommand) {
  Suite s = parse_suite(
      "name = \"x\"\n[base]\nmode = \"sharded\"\nranks = 2\n[[case]]\nname = \"plain\"\n"
      "[[case]]\nname = \"ring\"\nmpi_algorithm = 4\n"
      "[[case]]\nname = \"shm-zero\"\nallreduce = \"shm\"\nzero = 1\n",
      "p.toml", ".");
  PlanContext ctx;
  ctx.trainscope_binary = "/bin/trainscope";
  ctx.mpirun = "/usr/bin/mpirun";
  ctx.slots = 2;
  auto line = [&](const SuiteCase& c) {
    return shell_join(plan_case(s, c, ctx, "/tmp/s.json").argv);
  };
  const std::string plain = line(s.cases[0]);
  for (const char* absent : {"coll_tuned", "--allreduce", "--zero"}) {
    EXPECT_EQ(plain.find(absent), std::string::npos) << plain;
  }
  const LaunchPlan ring = plan_case(s, s.cases[1], ctx, "/tmp/s.json");
  const std::string ring_line = shell_join(ring.argv);
  EXPECT_NE(ring_line.find(" --mca coll_tuned_use_dynamic_rules 1 --mca "
                           "coll_tuned_allreduce_algorithm 4 "),
            std::string::npos)
      << ring_line;
  // mpirun's settings, before the trainscope command.
  EXPECT_LT(ring_line.find("coll_tuned"), ring_line.find("/bin/trainscope"));
  EXPECT_EQ(ring.transport["coll_tuned_use_dynamic_rules"], "1");
  EXPECT_EQ(ring.transport["coll_tuned_allreduce_algorithm"], "4");
  EXPECT_EQ(ring_line.find("--allreduce"), std::string::npos) << ring_line;
  const std::string shm_zero = line(s.cases[2]);
  EXPECT_NE(shm_zero.find(" train --model seed --mode sharded --reduce fused --allreduce shm "
                          "--zero 1 "),
            std::string::npos)
      << shm_zero;
  EXPECT_EQ(shm_zero.find("coll_tuned"), std::string::npos) << shm_zero;
  EXPECT_EQ(plain.find("--comm-dtype"), std::string::npos) << plain;
  const Suite bf16 = parse_suite(
      "name = \"x\"\n[base]\nmode = \"sharded\"\nranks = 2\n"
      "comm_dtype = \"bf16\"\n[[case]]\n",
      "p.toml", ".");
  const std::string bf16_line = line(bf16.cases[0]);
  EXPECT_NE(bf16_line.find(" --reduce fused --comm-dtype bf16 "), std::string::npos) << bf16_line;

  s = parse_suite(
      "name = \"x\"\nkind = \"allreduce\"\n[base]\nranks = 2\n[[case]]\n"
      "allreduce = \"hier\"\n",
      "p.toml", ".");
  const std::string sweep = line(s.cases[0]);
  EXPECT_NE(sweep.find(" allreduce-bench "), std::string::npos) << sweep;
  EXPECT_NE(sweep.find(" --allreduce hier "), std::string::npos) << sweep;
}

TEST(Table, RowsHaveTheSameColumns) {
  RunOutcome a;
  a.row.run_case.case_name = "naive-r1-fused";
  a.row.run_case.mode = "naive";
  a.row.run_case.reduction = "fused";
  a.row.run_case.threads = 2;
  a.row.status = results::RunStatus::kOk;
  a.figures.tokens_per_s = 1234.5;
  a.figures.step_median_s = 0.01225;
  a.figures.comm_share = 0.1;
  a.peak_rss_bytes = 300 << 20;
  RunOutcome b = a;
  b.figures.tokens_per_s = results::kNaN;
  b.row.status = results::RunStatus::kFailed;
  const std::string ra = format_result_row(a), rb = format_result_row(b);
  // Same columns: the rows differ only in the status word at the end.
  EXPECT_EQ(ra.size() - std::string("ok\n").size(), rb.size() - std::string("failed\n").size());
  EXPECT_EQ(ra.substr(0, 60), rb.substr(0, 60));
  EXPECT_NE(ra.find("1234"), std::string::npos);
  EXPECT_NE(ra.find("300M"), std::string::npos);
  EXPECT_NE(ra.find("10.0"), std::string::npos);
}

// A name longer than the default column (narrow24-...-comm-bf16#2) widens the
// column for the header and every row, so the figures stay under their titles.
TEST(Table, TheLongestCaseNameWidensTheCaseColumn) {
  const std::string longest = "narrow24-sharded-r2-fused-b32-comm-bf16";  // 39 characters
  EXPECT_EQ(result_name_width({"a", longest}, 1), 39);
  EXPECT_EQ(result_name_width({"a", longest}, 3), 41) << "#2";
  EXPECT_EQ(result_name_width({longest}, 11), 42) << "#10";
  EXPECT_EQ(result_name_width({"short"}, 3), kMinCaseColumn);
  RunOutcome a;
  a.row.run_case.case_name = longest;
  a.row.run_case.repetition = 2;
  a.row.status = results::RunStatus::kOk;
  RunOutcome b = a;
  b.row.run_case.case_name = "seed";
  b.row.run_case.repetition = 0;
  const int width = result_name_width({longest, "seed"}, 3);
  const std::string header = format_result_header(width);
  const size_t ranks_end = header.find("ranks") + 5;
  for (const RunOutcome& r : {a, b}) {
    const std::string row = format_result_row(r, width);
    EXPECT_EQ(row.find(' ', width), static_cast<size_t>(width)) << row;
    EXPECT_EQ(row.find_first_not_of(' ', width), ranks_end - 1) << "ranks under 'ranks': " << row;
  }
}

TEST(Table, FileTail) {
  namespace fs = std::filesystem;
  const fs::path p = fs::temp_directory_path() / ("trainscope-tail-" + std::to_string(::getpid()));
  auto write = [&](const char* text) {
    std::FILE* f = std::fopen(p.c_str(), "w");
    std::fputs(text, f);
    std::fclose(f);
  };
  write("");
  EXPECT_EQ(file_tail(p, 3), "");
  write("one\ntwo\nthree\nfour\n\n");
  EXPECT_EQ(file_tail(p, 2), "three\nfour");
  EXPECT_EQ(file_tail(p, 10), "one\ntwo\nthree\nfour");
  write("single");
  EXPECT_EQ(file_tail(p, 1), "single");
  fs::remove(p);
  EXPECT_EQ(file_tail(p, 1), "");
}

}  // namespace
}  // namespace trainscope::suites
