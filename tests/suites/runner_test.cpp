// The suite runner end to end with the built trainscope binary and mpirun:
// a small suite writes ok runs and a sound database; a failing and a hanging
// case are recorded failed while the suite goes on; bad input (missing mpirun,
// bad hostfile) fails before anything is written. Also the command plans.
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
#include "suites/cpus.h"

namespace trainscope::suites {
namespace {

namespace fs = std::filesystem;

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trainscope-runner-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    options_.db_path = dir_ / "results.db";
    options_.trainscope_binary = TRAINSCOPE_BINARY_DIR "/trainscope";
    options_.command_line = "runner_test";
    options_.poll_interval_s = 0.1;
    sink_ = std::fopen("/dev/null", "w");
    options_.progress = sink_;
    options_.out = sink_;
    ASSERT_TRUE(fs::exists(options_.trainscope_binary)) << "build trainscope first";
  }
  void TearDown() override {
    std::fclose(sink_);
    fs::remove_all(dir_);
  }
  Suite suite(const std::string& text) { return parse_suite(text, "test.toml", dir_); }

  fs::path dir_;
  RunnerOptions options_;
  std::FILE* sink_ = nullptr;
};

constexpr const char* kBase =
    "[base]\nmodel = \"tiny\"\nbatch = 4\nblock = 32\nsteps = 3\nwarmup_steps = 1\nthreads = 1\n";

TEST_F(RunnerTest, SmallSuiteWritesOkRunsAndSoundDb) {
  const Suite s = suite(std::string("name = \"mini\"\ntimeout_s = 120\n") + kBase +
                        "[grid]\nmode = [\"naive\", \"sharded\"]\nranks = [1, 2]\n");
  const SuiteResult r = run_suite(s, options_);
  EXPECT_EQ(r.exit_code(), 0);
  ASSERT_EQ(r.runs.size(), 4u);  // naive r1, naive r2 (skipped), sharded r1, sharded r2

  auto db = results::ResultsDb::open_for_reading(options_.db_path);
  EXPECT_EQ(db.integrity_check(), "ok");
  const auto suites = db.list_suites();
  ASSERT_EQ(suites.size(), 1u);
  EXPECT_TRUE(suites[0].info.finished_at.has_value());
  EXPECT_EQ(suites[0].info.name, "mini");
  const auto runs = db.list_runs(suites[0].id);
  ASSERT_EQ(runs.size(), 4u);
  int ok = 0, skipped = 0;
  for (const auto& run : runs) {
    if (run.status == results::RunStatus::kSkipped) {
      ++skipped;
      EXPECT_NE(run.error.find("naive runs one process"), std::string::npos);
      continue;
    }
    ASSERT_EQ(run.status, results::RunStatus::kOk) << run.run_case.case_name << ": " << run.error;
    ++ok;
    EXPECT_TRUE(run.has_summary);
    EXPECT_GT(run.totals.tokens_per_s, 0);
    const auto summary = db.run_summary(run.id);
    ASSERT_TRUE(summary.has_value());
    EXPECT_EQ(summary->world_size, run.run_case.world_size);
    EXPECT_FALSE(db.poller_samples(run.id).empty()) << run.run_case.case_name;
  }
  EXPECT_EQ(ok, 3);
  EXPECT_EQ(skipped, 1);
  // The 2-rank case went through mpirun, the 1-rank ones did not.
  for (const auto& run : runs) {
    if (run.status == results::RunStatus::kSkipped) continue;
    EXPECT_EQ(run.run_case.launcher_command.find("mpirun") != std::string::npos,
              run.run_case.world_size > 1)
        << run.run_case.launcher_command;
  }
}

// Repetitions run in rounds (every case once per round), each round after
// the first in an order shuffled from the seed the suite records.
TEST_F(RunnerTest, RepetitionsRunInShuffledRoundsFromARecordedSeed) {
  const Suite s = suite(std::string("name = \"rounds\"\ntimeout_s = 120\n") + kBase +
                        "[grid]\nbatch = [2, 4, 8]\n");
  options_.repeat = 3;
  options_.order_seed = 7;
  options_.measure_limits = false;
  const SuiteResult r = run_suite(s, options_);
  ASSERT_EQ(r.exit_code(), 0);
  ASSERT_EQ(r.runs.size(), 9u);
  std::vector<std::string> suite_order;
  for (const auto& c : s.cases) suite_order.push_back(c.name);
  bool shuffled = false;
  for (int round = 0; round < 3; ++round) {
    std::vector<std::string> names;
    for (int i = 0; i < 3; ++i) {
      const auto& run = r.runs[static_cast<size_t>(round * 3 + i)].row.run_case;
      EXPECT_EQ(run.repetition, round) << run.case_name;
      names.push_back(run.case_name);
    }
    if (round == 0) {
      EXPECT_EQ(names, suite_order) << "the first round keeps the suite's order";
    }
    shuffled = shuffled || names != suite_order;
    std::sort(names.begin(), names.end());
    std::vector<std::string> expected = suite_order;
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(names, expected) << "round " << round << ": every case once";
  }
  EXPECT_TRUE(shuffled) << "three rounds in the suite's own order";
  auto db = results::ResultsDb::open_for_reading(options_.db_path);
  const auto suites = db.list_suites();
  ASSERT_EQ(suites.size(), 1u);
  EXPECT_EQ(suites[0].info.environment.at("run_order").at("seed"), 7u);
  EXPECT_EQ(suites[0].info.environment.at("run_order").at("rounds"), 3);
}

// The machine's limits, measured before the first case at what the cases
// use, stored with the suite; each run's key finds its limit. --no-limits:
// none.
TEST_F(RunnerTest, TheSuitesLimitsAreMeasuredAtItsCasesKeys) {
  const Suite s = suite(std::string("name = \"limits\"\ntimeout_s = 120\n") + kBase +
                        "[grid]\nmode = [\"sharded\"]\nranks = [1, 2]\n");
  const SuiteResult r = run_suite(s, options_);
  ASSERT_EQ(r.exit_code(), 0);
  auto db = results::ResultsDb::open_for_reading(options_.db_path);
  const auto limits = db.machine_limits(r.suite_id);
  for (const auto& run : r.runs) {
    ASSERT_TRUE(run.summary.has_value());
    const int64_t rows = run.summary->steps.front().front().tokens;  // 4 / ranks x 31
    const auto sgemm = std::find_if(limits.begin(), limits.end(), [&](const auto& l) {
      return l.kind == results::LimitKind::kSgemm && l.rows == rows &&
             l.threads == run.summary->threads_per_rank && l.model == "tiny";
    });
    ASSERT_NE(sgemm, limits.end()) << run.row.run_case.case_name;
    EXPECT_GT(sgemm->value, 0);
    EXPECT_GT(run.summary->flops_per_step, 0);
  }
  const auto count = [&](results::LimitKind kind) {
    return std::count_if(limits.begin(), limits.end(),
                         [&](const auto& l) { return l.kind == kind; });
  };
  // Two one-thread ranks on this host: the same sgemm on two CPUs at once
  // (a copy's GFLOP/s), so the report can say what two ranks can reach.
  const auto& two = r.runs[1];
  const bool side_by_side = two.summary->threads_per_rank == 1 && cores_available() >= 2;
  const auto at_once = std::find_if(limits.begin(), limits.end(), [&](const auto& l) {
    return l.kind == results::LimitKind::kSgemm && l.ranks == 2;
  });
  if (side_by_side) {
    ASSERT_NE(at_once, limits.end()) << "no sgemm at once for the 2-rank case";
    EXPECT_EQ(at_once->rows, two.summary->steps.front().front().tokens);
    EXPECT_EQ(at_once->threads, 1);
    EXPECT_GT(at_once->value, 0);
  } else {
    EXPECT_EQ(at_once, limits.end()) << "more threads a rank than one, or one CPU";
  }
  EXPECT_EQ(count(results::LimitKind::kSgemm), side_by_side ? 3 : 2);
  EXPECT_EQ(count(results::LimitKind::kMemcpy), 1);
  ASSERT_EQ(count(results::LimitKind::kAllReduce), 1);
  for (const auto& l : limits) {
    EXPECT_EQ(l.source, "trainscope suite run");
    if (l.kind != results::LimitKind::kAllReduce) continue;
    EXPECT_EQ(l.transport, r.runs[1].row.run_case.links);
    EXPECT_EQ(l.ranks, 2);
    EXPECT_GT(l.value, 0);
  }

  options_.measure_limits = false;
  const SuiteResult without = run_suite(s, options_);
  EXPECT_TRUE(results::ResultsDb::open_for_reading(options_.db_path)
                  .machine_limits(without.suite_id)
                  .empty());
}

// Ranks that share fewer cores than they are (cores_per_host 1, 2 ranks)
// have no CPU each: copies pinned a CPU each would give them a ceiling they
// cannot reach, so none is measured.
TEST_F(RunnerTest, RanksSharingACoreGetNoSgemmAtOnce) {
  const Suite s = suite(std::string("name = \"shared\"\ntimeout_s = 120\n") + kBase +
                        "[[case]]\nmode = \"sharded\"\nranks = 2\ncores_per_host = 1\n");
  const SuiteResult r = run_suite(s, options_);
  ASSERT_EQ(r.exit_code(), 0);
  const auto limits =
      results::ResultsDb::open_for_reading(options_.db_path).machine_limits(r.suite_id);
  ASSERT_FALSE(limits.empty());
  for (const auto& l : limits) {
    EXPECT_FALSE(l.kind == results::LimitKind::kSgemm && l.ranks > 1) << results::describe_key(l);
  }
}

TEST_F(RunnerTest, FailingAndHangingCasesAreRecordedAndSuiteGoesOn) {
  const Suite s = suite(std::string("name = \"bad\"\ntimeout_s = 60\n") + kBase +
                        "[[case]]\nname = \"bad-option\"\nmode = \"sharded\"\nranks = 2\n"
                        "[[case]]\nname = \"good\"\n");
  // The bad case gets a flag train does not know: exit 2.
  Suite with_bad = s;
  with_bad.cases[0].extra_args = {"--no-such-flag"};
  SuiteResult r = run_suite(with_bad, options_);
  EXPECT_EQ(r.exit_code(), 1);
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[0].row.status, results::RunStatus::kFailed);
  EXPECT_NE(r.runs[0].row.exit_code.value_or(0), 0);
  EXPECT_NE(r.runs[0].row.error.find("no-such-flag"), std::string::npos) << r.runs[0].row.error;
  EXPECT_EQ(r.runs[1].row.status, results::RunStatus::kOk) << r.runs[1].row.error;

  // A case that cannot finish within its timeout is killed; the next runs.
  const Suite slow = suite(std::string("name = \"slow\"\ntimeout_s = 120\n") + kBase +
                           "[[case]]\nname = \"hang\"\nmode = \"sharded\"\nranks = 2\n"
                           "timeout_s = 1.5\n[[case]]\nname = \"after\"\n");
  Suite hang = slow;
  hang.cases[0].train.steps = 1000000;
  r = run_suite(hang, options_);
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[0].row.status, results::RunStatus::kFailed);
  EXPECT_NE(r.runs[0].row.error.find("timed out after 1.5 s"), std::string::npos)
      << r.runs[0].row.error;
  EXPECT_LT(r.runs[0].seconds, 10.0);
  EXPECT_EQ(r.runs[1].row.status, results::RunStatus::kOk) << r.runs[1].row.error;
  EXPECT_EQ(r.exit_code(), 1);

  auto db = results::ResultsDb::open_for_reading(options_.db_path);
  EXPECT_EQ(db.integrity_check(), "ok");
  const auto suites = db.list_suites();
  ASSERT_EQ(suites.size(), 2u);
  const auto runs = db.list_runs(suites[0].id);  // latest first: the timeout suite
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].status, results::RunStatus::kFailed);
  EXPECT_NE(runs[0].error.find("timed out"), std::string::npos);
  const auto bad_runs = db.list_runs(suites[1].id);
  ASSERT_EQ(bad_runs.size(), 2u);
  EXPECT_EQ(bad_runs[0].status, results::RunStatus::kFailed);
  ASSERT_TRUE(bad_runs[0].exit_code.has_value());
  EXPECT_NE(*bad_runs[0].exit_code, 0);
}

TEST_F(RunnerTest, MissingMpirunFailsBeforeWriting) {
  const Suite s =
      suite(std::string("name = \"x\"\n") + kBase + "[[case]]\nmode = \"sharded\"\nranks = 2\n");
  options_.mpirun = "/nonexistent/mpirun";
  try {
    run_suite(s, options_);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), kExitBadInput);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/mpirun"), std::string::npos) << e.what();
  }
  options_.mpirun = "no-such-mpirun-anywhere";
  EXPECT_THROW(run_suite(s, options_), Error);
  EXPECT_FALSE(fs::exists(options_.db_path));
}

TEST_F(RunnerTest, BadHostfileAndFilterFailBeforeWriting) {
  const Suite s = suite(std::string("name = \"x\"\n") + kBase + "[[case]]\nname = \"a\"\n");
  {
    std::FILE* f = std::fopen((dir_ / "hosts").c_str(), "w");
    std::fputs("localhost slots=two\n", f);
    std::fclose(f);
  }
  options_.hostfile = dir_ / "hosts";
  try {
    run_suite(s, options_);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(":1:"), std::string::npos) << e.what();
  }
  options_.hostfile.clear();
  options_.filter = "zzz";
  EXPECT_THROW(run_suite(s, options_), Error);
  EXPECT_FALSE(fs::exists(options_.db_path));
}

TEST_F(RunnerTest, HostfileOfOtherHostsNeedsAnInterfaceThatReachesThem) {
  const Suite s =
      suite(std::string("name = \"x\"\n") + kBase + "[[case]]\nmode = \"sharded\"\nranks = 2\n");
  auto write_hosts = [&](const char* text) {
    std::FILE* f = std::fopen((dir_ / "hosts").c_str(), "w");
    std::fputs(text, f);
    std::fclose(f);
  };
  options_.hostfile = dir_ / "hosts";
  options_.dry_run = true;
  std::string printed;
  auto dry_run = [&] {
    char* buf = nullptr;
    size_t size = 0;
    std::FILE* out = open_memstream(&buf, &size);
    options_.out = out;
    run_suite(s, options_);
    std::fclose(out);
    printed.assign(buf, size);
    std::free(buf);
    options_.out = sink_;
  };
  // This machine under any of its names: loopback reaches it.
  char self[256] = {};
  gethostname(self, sizeof(self) - 1);
  write_hosts((std::string("localhost slots=1\n127.0.0.1\n::1\n") + self + "\n").c_str());
  EXPECT_NO_THROW(dry_run());
  // Another host over lo would hang until the timeout: refused up front.
  write_hosts("localhost\nnode-elsewhere-17 slots=2\n");
  try {
    dry_run();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), kExitBadInput);
    EXPECT_NE(std::string(e.what()).find("node-elsewhere-17"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--tcp-interface"), std::string::npos) << e.what();
  }
  // --tcp-interface pins both TCP components to the interface given.
  options_.tcp_interface = "eth7";
  ASSERT_NO_THROW(dry_run());
  EXPECT_NE(printed.find("--mca btl_tcp_if_include eth7"), std::string::npos) << printed;
  EXPECT_NE(printed.find("--mca oob_tcp_if_include eth7"), std::string::npos) << printed;
  EXPECT_EQ(printed.find(" lo "), std::string::npos) << printed;
  EXPECT_FALSE(fs::exists(options_.db_path));
}

// Where virtual clusters cannot be made (here: the scripts are missing; not
// root and containers say so too), a case on several hosts is skipped with
// the reason, never failed, and the other cases run.
TEST_F(RunnerTest, HostsWithoutAClusterAreSkippedWithTheReason) {
  const Suite s = suite(std::string("name = \"x\"\ntimeout_s = 120\n") + kBase +
                        "[[case]]\nname = \"one\"\n"
                        "[[case]]\nname = \"two-hosts\"\nmode = \"sharded\"\nhosts = 2\n"
                        "link = \"gige\"\n");
  const char* old = std::getenv("TRAINSCOPE_SCRIPTS_DIR");
  const std::string saved = old ? old : "";
  ::setenv("TRAINSCOPE_SCRIPTS_DIR", (dir_ / "no-scripts").c_str(), 1);
  const SuiteResult r = run_suite(s, options_);
  old ? ::setenv("TRAINSCOPE_SCRIPTS_DIR", saved.c_str(), 1) : ::unsetenv("TRAINSCOPE_SCRIPTS_DIR");
  EXPECT_EQ(r.exit_code(), 0);
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[0].row.status, results::RunStatus::kOk) << r.runs[0].row.error;
  EXPECT_EQ(r.runs[1].row.status, results::RunStatus::kSkipped);
  EXPECT_NE(r.runs[1].row.error.find("needs a virtual cluster (2 hosts x 0 cores, link gige): "),
            std::string::npos)
      << r.runs[1].row.error;
  auto db = results::ResultsDb::open_for_reading(options_.db_path);
  const auto runs = db.list_runs(db.list_suites()[0].id);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].status, results::RunStatus::kSkipped);
  EXPECT_EQ(runs[1].run_case.host_count, 2);
  EXPECT_EQ(runs[1].run_case.link, "gige");
}

// A cluster that does not come up (here a netns-cluster.sh whose `up` fails,
// as when tc refuses tbf) fails its case, naming why, and the suite goes on.
TEST_F(RunnerTest, AClusterThatDoesNotComeUpFailsItsCaseAndTheSuiteGoesOn) {
  if (const std::string why = virtual_cluster_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << "virtual clusters cannot be made here: " << why;
  }
  const fs::path scripts = dir_ / "scripts";
  fs::create_directories(scripts);
  std::ofstream(scripts / "netns-cluster.sh")
      << "#!/bin/sh\ncase \"$1\" in up) echo 'netns-cluster.sh: tc refused tbf (simulated)' >&2; "
         "exit 1;; esac\nexit 0\n";
  fs::permissions(scripts / "netns-cluster.sh", fs::perms::owner_all);
  const Suite s = suite(std::string("name = \"x\"\ntimeout_s = 120\n") + kBase +
                        "[[case]]\nname = \"two-hosts\"\nmode = \"sharded\"\nhosts = 2\n"
                        "link = \"gige\"\n[[case]]\nname = \"one\"\n");
  const char* old = std::getenv("TRAINSCOPE_SCRIPTS_DIR");
  const std::string saved = old ? old : "";
  ::setenv("TRAINSCOPE_SCRIPTS_DIR", scripts.c_str(), 1);
  SuiteResult r;
  EXPECT_NO_THROW(r = run_suite(s, options_));
  old ? ::setenv("TRAINSCOPE_SCRIPTS_DIR", saved.c_str(), 1) : ::unsetenv("TRAINSCOPE_SCRIPTS_DIR");
  EXPECT_EQ(r.exit_code(), kExitFailure);
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[0].row.status, results::RunStatus::kFailed);
  EXPECT_NE(r.runs[0].row.error.find("its hosts could not be made ready: "), std::string::npos)
      << r.runs[0].row.error;
  EXPECT_NE(r.runs[0].row.error.find("tc refused tbf (simulated)"), std::string::npos)
      << r.runs[0].row.error;
  EXPECT_EQ(r.runs[1].row.status, results::RunStatus::kOk) << r.runs[1].row.error;
  auto db = results::ResultsDb::open_for_reading(options_.db_path);
  const auto suites = db.list_suites();
  ASSERT_EQ(suites.size(), 1u);
  EXPECT_TRUE(suites[0].info.finished_at.has_value());
  EXPECT_EQ(db.list_runs(suites[0].id)[0].status, results::RunStatus::kFailed);
}

// Over a hostfile (real machines) a case needs that many hosts, and a link
// profile cannot be imposed on a real network, nor one host's CPU quota on
// the hostfile's host.
TEST_F(RunnerTest, OverAHostfileLinkProfilesAndMissingHostsAreSkipped) {
  const Suite s = suite(std::string("name = \"x\"\n") + kBase +
                        "[[case]]\nname = \"shaped\"\nmode = \"sharded\"\nhosts = 2\n"
                        "link = \"gige\"\n"
                        "[[case]]\nname = \"four\"\nmode = \"sharded\"\nhosts = 4\n"
                        "[[case]]\nname = \"plain\"\nmode = \"sharded\"\nhosts = 2\n"
                        "[[case]]\nname = \"quota\"\nmode = \"naive\"\ncpu_share = 0.5\n"
                        "cores_per_host = 1\n");
  std::FILE* f = std::fopen((dir_ / "hosts").c_str(), "w");
  std::fputs("localhost slots=1\n127.0.0.1 slots=1\n", f);
  std::fclose(f);
  options_.hostfile = dir_ / "hosts";
  options_.dry_run = true;
  const SuiteResult r = run_suite(s, options_);
  ASSERT_EQ(r.runs.size(), 3u);  // a dry run lists its skipped cases
  EXPECT_NE(r.runs[0].row.error.find("link gige shapes virtual hosts only"), std::string::npos)
      << r.runs[0].row.error;
  EXPECT_NE(r.runs[1].row.error.find("needs 4 hosts; --hostfile "), std::string::npos)
      << r.runs[1].row.error;
  EXPECT_NE(r.runs[1].row.error.find(" lists 2"), std::string::npos) << r.runs[1].row.error;
  EXPECT_NE(r.runs[2].row.error.find("cpu_share 0.5 on one host is a quota on this machine"),
            std::string::npos)
      << r.runs[2].row.error;
  options_.cluster = "some-cluster";  // and --cluster names hosts too
  EXPECT_THROW(run_suite(s, options_), Error);
  options_.hostfile.clear();
  options_.cluster = "../../etc";
  try {
    run_suite(s, options_);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--cluster '../../etc': a cluster prefix is"),
              std::string::npos)
        << e.what();
  }
}

// Writes an executable shell script.
void write_script(const fs::path& path, const std::string& body) {
  std::ofstream(path) << "#!/bin/sh\n" << body;
  fs::permissions(path, fs::perms::owner_all);
}

// The runner passes the all-reduce settings on and labels the sweep rows with
// them. Stand-ins keep it to the runner: an mpirun that records its command
// line and runs the command once, and a bench that writes one row saying the
// algorithm it was given, or "mpi" whatever it was given, as a binary without
// --allreduce would.
TEST_F(RunnerTest, SweepRowsCarryTheCasesAlgorithmsAndAMismatchFailsTheCase) {
  const fs::path log = dir_ / "mpirun.log";
  write_script(dir_ / "mpirun", "echo \"$*\" >> " + log.string() +
                                    "\n"
                                    "while [ \"$1\" != \"" +
                                    (dir_ / "bench").string() +
                                    "\" ]; do shift; done\n"
                                    "exec \"$@\"\n");
  const std::string bench = R"(algorithm=mpi
while [ $# -gt 0 ]; do
  case "$1" in --jsonl) out=$2; shift;; --allreduce) given=$2; shift;; esac; shift
done
ALGORITHM
printf '{"transport": "auto", "links": "", "world_size": 2, "size_bytes": 1024, "count": 256, "dtype": "float32", "redop": "sum", "time_us": 10, "algbw_gbps": 0.1, "busbw_gbps": 0.1, "wrong": 0, "algorithm": "%s"}\n' "$algorithm" > "$out"
)";
  auto with = [&](const std::string& line) {
    return std::string(bench).replace(bench.find("ALGORITHM"), 9, line);
  };
  write_script(dir_ / "bench", with("[ -n \"$given\" ] && algorithm=$given"));
  options_.mpirun = (dir_ / "mpirun").string();
  options_.trainscope_binary = dir_ / "bench";
  const Suite s = suite(
      "name = \"alg\"\nkind = \"allreduce\"\ntimeout_s = 30\n[base]\nranks = 2\nmax_bytes = 1024\n"
      "[[case]]\nmpi_algorithm = 4\n[[case]]\nallreduce = \"shm\"\n");
  SuiteResult r = run_suite(s, options_);
  ASSERT_EQ(r.runs.size(), 2u);
  for (const auto& run : r.runs) {
    EXPECT_EQ(run.row.status, results::RunStatus::kOk) << run.row.error;
  }
  {
    auto db = results::ResultsDb::open_for_reading(options_.db_path);
    const auto rows0 = db.allreduce_rows(r.runs[0].row.id);
    const auto rows1 = db.allreduce_rows(r.runs[1].row.id);
    ASSERT_EQ(rows0.size(), 1u);
    ASSERT_EQ(rows1.size(), 1u);
    EXPECT_EQ(rows0[0].algorithm, "mpi");
    EXPECT_EQ(rows0[0].mpi_algorithm, 4);
    EXPECT_EQ(rows1[0].algorithm, "shm");
    EXPECT_EQ(rows1[0].mpi_algorithm, 0);
    EXPECT_EQ(db.run(r.runs[0].row.id)->run_case.transport["coll_tuned_allreduce_algorithm"], "4");
  }
  const std::string launched = read_file(log);
  EXPECT_NE(launched.find("--mca coll_tuned_use_dynamic_rules 1 --mca "
                          "coll_tuned_allreduce_algorithm 4 "),
            std::string::npos)
      << launched;
  EXPECT_NE(launched.find("allreduce-bench --min-bytes 8 --max-bytes 1024 --factor 2 --iters 20 "
                          "--warmup 5 --jsonl "),
            std::string::npos)
      << launched;
  EXPECT_NE(launched.find(" --allreduce shm"), std::string::npos) << launched;

  write_script(dir_ / "bench", with("true"));  // ignores --allreduce
  r = run_suite(s, options_);
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[0].row.status, results::RunStatus::kOk) << r.runs[0].row.error;
  EXPECT_EQ(r.runs[1].row.status, results::RunStatus::kFailed);
  EXPECT_NE(r.runs[1].row.error.find("the sweep rows say all-reduce algorithm 'mpi' but the case "
                                     "asked for 'shm'"),
            std::string::npos)
      << r.runs[1].row.error;
}

TEST_F(RunnerTest, UnwritableDbIsAnError) {
  const Suite s = suite(std::string("name = \"x\"\n") + kBase + "[[case]]\nname = \"a\"\n");
  options_.db_path = dir_ / "no-such-dir" / "r.db";
  EXPECT_THROW(run_suite(s, options_), Error);
  // A file that is not a database.
  options_.db_path = dir_ / "garbage.db";
  {
    std::FILE* f = std::fopen(options_.db_path.c_str(), "w");
    std::fputs("this is not sqlite, just text that is long enough to have a header......", f);
    std::fclose(f);
  }
  EXPECT_THROW(run_suite(s, options_), Error);
}

}  // namespace
}  // namespace trainscope::suites
