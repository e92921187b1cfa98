// Multi-host runs for real, on one machine: scripts/netns-cluster.sh makes a
// virtual cluster of network namespaces (hosts P-h0, P-h1 behind a bridge in
// P-br), scripts/netns-mpirun.sh runs mpirun inside P-h0 and reaches P-h1
// through scripts/netns-rsh-agent.sh. The suite runner runs tiny suites with
// the hostfile of the cluster; the results must name both hosts, match a
// one-host run of the same cases loss for loss, and carry poller samples.
//
// The fixture (netns_fixture.h) gives each test its own cluster prefix,
// skips where clusters cannot be made and checks that nothing is left; the
// script test also checks that nothing is added to the root namespace.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/check.h"
#include "profiler/supervise.h"
#include "results/results_db.h"
#include "suites/runner.h"
#include "tests/suites/netns_fixture.h"

namespace trainscope::suites {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::kScripts;
using testing::trim;
CommandResult run_command(const std::string& command) { return testing::run_shell(command); }

// Whether a process exists and is not a zombie (its reaper may take a while).
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

// The root namespace's interfaces and addresses (not their lifetimes, which
// count down on some machines).
std::string root_namespace_view() {
  return run_command(
             "ip -o link show | awk -F': ' '{print $2}'; ip -o addr show | awk '{print $2, $4}'")
      .output;
}

class NetnsClusterTest : public testing::NetnsTest {
 protected:
  void SetUp() override {
    NetnsTest::SetUp();
    if (IsSkipped()) return;
    sink_ = std::fopen("/dev/null", "w");
  }
  void TearDown() override {
    if (sink_) std::fclose(sink_);
    NetnsTest::TearDown();
  }

  RunnerOptions options(const std::string& db_name) const {
    RunnerOptions o;
    o.db_path = dir_->path() / db_name;
    o.trainscope_binary = TRAINSCOPE_BINARY_DIR "/trainscope";
    o.command_line = "netns_cluster_test";
    o.poll_interval_s = 0.05;
    o.progress = sink_;
    o.out = sink_;
    return o;
  }
  // A run on the cluster, as a runner that brought it up would make it.
  RunnerOptions cluster_options(const std::string& db_name) const {
    RunnerOptions o = options(db_name);
    o.hostfile = cluster_->hostfile();
    o.mpirun = cluster_->mpirun();
    o.tcp_interface = cluster_->tcp_interface();
    return o;
  }

  std::FILE* sink_ = nullptr;
};

// Every run of the latest suite in `db`, by case name, with its summary.
std::map<std::string, results::RunSummary> summaries(const fs::path& db_path,
                                                     std::vector<results::RunRow>* rows = nullptr) {
  auto db = results::ResultsDb::open_for_reading(db_path);
  std::map<std::string, results::RunSummary> out;
  const auto suites = db.list_suites();
  if (suites.empty()) return out;
  for (const auto& run : db.list_runs(suites[0].id)) {
    if (rows) rows->push_back(run);
    if (auto s = db.run_summary(run.id)) out[run.run_case.case_name] = *s;
  }
  return out;
}

std::vector<double> losses(const results::RunSummary& s) {
  std::vector<double> v;
  if (s.steps.empty()) return v;
  for (const auto& step : s.steps[0]) v.push_back(step.loss);
  return v;
}

// The tiny 2-rank TCP suite, sharded data, both blocking reductions; the
// interface comes from the runner's options (eth0 on the cluster, lo alone).
constexpr const char* kTinySuite =
    "name = \"netns-tiny\"\ntimeout_s = 60\n"
    "[base]\nmodel = \"tiny\"\nbatch = 4\nblock = 32\nsteps = 6\nwarmup_steps = 1\n"
    "threads = 1\nmode = \"sharded\"\nranks = 2\ntransport = \"tcp\"\n"
    "[grid]\nreduce = [\"fused\", \"per-tensor\"]\n";

TEST_F(NetnsClusterTest, ScriptMakesAndRemovesTheClusterAndTouchesNothingElse) {
  const std::string root_before = root_namespace_view();
  const std::string hostname_before = trim(run_command("cat /proc/sys/kernel/hostname").output);

  EXPECT_EQ(run_command(kScripts + "/netns-cluster.sh --help").exit_code, 0);
  EXPECT_EQ(run_command(kScripts + "/netns-cluster.sh up").exit_code, 2);
  EXPECT_EQ(run_command(kScripts + "/netns-cluster.sh up 2 --prefix 'bad prefix'").exit_code, 2);

  ASSERT_NO_FATAL_FAILURE(bring_up(2));
  const CommandResult again = script("up 2 --prefix " + prefix());  // idempotent
  ASSERT_EQ(again.exit_code, 0) << again.output;
  const std::vector<std::string> expected = {prefix() + "-br", host(0), host(1)};
  EXPECT_EQ(testing::namespaces_of(prefix()), expected);
  // The root namespace got no address and no interface.
  EXPECT_EQ(root_namespace_view(), root_before);

  // Every host name resolves, inside every host, to the address that host has.
  for (int from = 0; from < 2; ++from) {
    for (int to = 0; to < 2; ++to) {
      const std::string addr =
          trim(run_command("ip -n " + host(to) +
                           " -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1")
                   .output);
      ASSERT_FALSE(addr.empty());
      const std::string resolved =
          trim(run_command("ip netns exec " + host(from) + " getent ahostsv4 " + host(to) +
                           " | awk 'NR==1{print $1}'")
                   .output);
      EXPECT_EQ(resolved, addr) << host(from) << " -> " << host(to);
    }
  }

  // The agent runs the command in the host's namespaces, with the host's name,
  // accepting ssh-style options before the host; the root's name is untouched.
  const CommandResult agent =
      run_command(kScripts + "/netns-rsh-agent.sh -x -o BatchMode=yes " + host(1) +
                  " cat /proc/sys/kernel/hostname ';' ip -4 -o addr show dev eth0 '|' wc -l");
  ASSERT_EQ(agent.exit_code, 0) << agent.output;
  EXPECT_EQ(agent.output, host(1) + "\n1\n");
  EXPECT_EQ(trim(run_command("cat /proc/sys/kernel/hostname").output), hostname_before);
  EXPECT_EQ(run_command(kScripts + "/netns-rsh-agent.sh " + prefix() + "-nohost true").exit_code,
            255);
  EXPECT_EQ(run_command(kScripts + "/netns-rsh-agent.sh " + host(0) + " exit 7").exit_code, 7);

  // down removes everything, processes left inside included, and is idempotent.
  run_command("ip netns exec " + host(1) + " sleep 300 >/dev/null 2>&1 &");
  const std::string left = processes_left(2);
  ASSERT_FALSE(left.empty());
  CommandResult down = script("down --prefix " + prefix());
  ASSERT_EQ(down.exit_code, 0) << down.output;
  EXPECT_TRUE(testing::namespaces_of(prefix()).empty());
  EXPECT_FALSE(running(std::stoi(left))) << "process " << left << " survived down";
  EXPECT_FALSE(fs::exists("/etc/netns/" + host(0)));
  EXPECT_FALSE(fs::exists("/run/trainscope-netns/" + prefix()));
  EXPECT_EQ(script("down --prefix " + prefix()).exit_code, 0);

  // ... also after a partial `up`: a lone namespace and hosts file.
  ASSERT_EQ(run_command("ip netns add " + host(0)).exit_code, 0);
  fs::create_directories("/etc/netns/" + host(0));
  std::ofstream("/etc/netns/" + host(0) + "/hosts") << "127.0.0.1 localhost\n";
  down = script("down --prefix " + prefix());
  ASSERT_EQ(down.exit_code, 0) << down.output;
  EXPECT_TRUE(testing::namespaces_of(prefix()).empty());
  EXPECT_FALSE(fs::exists("/etc/netns/" + host(0)));
  EXPECT_EQ(root_namespace_view(), root_before);
}

TEST_F(NetnsClusterTest, SuiteOverTwoHostsMatchesOneHost) {
  ASSERT_NO_FATAL_FAILURE(bring_up(2));
  const Suite cluster_suite = parse_suite(kTinySuite, "netns.toml", dir_->path());

  // Without an interface that reaches the other host the job could only hang.
  RunnerOptions over_lo = cluster_options("lo.db");
  over_lo.tcp_interface.clear();
  try {
    run_suite(cluster_suite, over_lo);
    ADD_FAILURE() << "a hostfile of other hosts over lo should be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--tcp-interface"), std::string::npos) << e.what();
  }

  const SuiteResult on_cluster = run_suite(cluster_suite, cluster_options("cluster.db"));
  ASSERT_EQ(on_cluster.runs.size(), 2u);
  for (const auto& c : on_cluster.runs) {
    ASSERT_EQ(c.row.status, results::RunStatus::kOk)
        << c.row.run_case.case_name << ": " << c.row.error;
  }
  EXPECT_EQ(processes_left(2), "") << "the jobs left processes in the hosts";
  for (const auto& entry : fs::directory_iterator(dir_->path())) {
    EXPECT_EQ(entry.path().filename().string().rfind("trainscope-suite-", 0), std::string::npos)
        << entry.path() << " left behind";
  }

  // The same cases on this machine alone, over loopback.
  const SuiteResult local = run_suite(cluster_suite, options("local.db"));
  for (const auto& c : local.runs) {
    ASSERT_EQ(c.row.status, results::RunStatus::kOk)
        << c.row.run_case.case_name << ": " << c.row.error;
  }

  std::vector<results::RunRow> rows;
  const auto multi = summaries(dir_->path() / "cluster.db", &rows);
  const auto single = summaries(dir_->path() / "local.db");
  ASSERT_EQ(multi.size(), 2u);
  ASSERT_EQ(single.size(), 2u);
  auto db = results::ResultsDb::open_for_reading(dir_->path() / "cluster.db");
  for (const auto& row : rows) {
    const std::string& name = row.run_case.case_name;
    SCOPED_TRACE(name);
    EXPECT_NE(row.run_case.launcher_command.find("--hostfile"), std::string::npos);
    EXPECT_NE(row.run_case.launcher_command.find("btl_tcp_if_include eth0"), std::string::npos)
        << row.run_case.launcher_command;
    // Rank 0 wrote the summary beside the database (shared on a real
    // cluster more often than /tmp), and the runner removed the folder.
    EXPECT_NE(row.run_case.launcher_command.find("--summary " +
                                                 (dir_->path() / "trainscope-suite-").string()),
              std::string::npos)
        << row.run_case.launcher_command;
    const results::RunSummary& s = multi.at(name);
    ASSERT_EQ(s.world_size, 2);

    // Two hosts, named after the namespaces; by-slot mapping puts rank r on
    // the hostfile's r-th host.
    std::vector<std::string> hosts = s.hosts;
    std::sort(hosts.begin(), hosts.end());
    EXPECT_EQ(hosts, (std::vector<std::string>{host(0), host(1)}));
    ASSERT_EQ(s.ranks.size(), 2u);
    for (const auto& r : s.ranks) EXPECT_EQ(r.host, host(r.rank));

    // Same data order, same reduction, a two-operand sum (commutative in
    // IEEE arithmetic), one thread per rank: the losses are bitwise those of
    // the one-host run.
    const std::vector<double> got = losses(s), want = losses(single.at(name));
    ASSERT_EQ(got.size(), want.size());
    ASSERT_FALSE(got.empty());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << "step " << i;

    // The poller recorded the job (these jobs last a few polls: which ranks
    // it caught is HungJobIsKilledOnEveryHost's business).
    const auto samples = db.poller_samples(row.id);
    ASSERT_FALSE(samples.empty());
    bool launcher = false;
    for (const auto& p : samples) {
      launcher = launcher || p.role == profiler::ProcessRole::kLauncher;
      if (p.role == profiler::ProcessRole::kRank) {
        EXPECT_TRUE(p.rank == 0 || p.rank == 1) << p.rank;
      }
    }
    EXPECT_TRUE(launcher);
  }
}

// The hierarchical all-reduce over two real (virtual) hosts, two ranks each:
// shared memory inside each host, MPI over the veths between them. Every
// reduction strategy follows Open MPI's all-reduce on the same cluster within
// 1e-5 (a different order of summation); shm across the hosts is a clear
// error, never a wrong sum.
TEST_F(NetnsClusterTest, HierarchicalAllReduceSpansHostsAndShmRefusesTo) {
  ASSERT_NO_FATAL_FAILURE(bring_up(2));
  const char* kSuite =
      "name = \"netns-hier\"\ntimeout_s = 120\n"
      "[base]\nmodel = \"tiny\"\nbatch = 8\nblock = 32\nsteps = 6\nwarmup_steps = 1\n"
      "threads = 1\nmode = \"sharded\"\nranks = 4\ntransport = \"tcp\"\nbucket_mb = 0.01\n"
      "[grid]\nreduce = [\"fused\", \"overlap\"]\nallreduce = [\"mpi\", \"hier\", \"shm\"]\n";
  const SuiteResult result =
      run_suite(parse_suite(kSuite, "hier.toml", dir_->path()), cluster_options("hier.db"));
  std::vector<results::RunRow> rows;
  const auto runs = summaries(dir_->path() / "hier.db", &rows);
  EXPECT_EQ(processes_left(2), "") << "the jobs left processes in the hosts";
  for (const auto& row : rows) {
    const std::string& name = row.run_case.case_name;
    SCOPED_TRACE(name);
    if (name.find("ar-shm") != std::string::npos) {
      EXPECT_EQ(row.status, results::RunStatus::kFailed);
      EXPECT_NE(row.error.find("use --allreduce hier"), std::string::npos) << row.error;
      continue;
    }
    ASSERT_EQ(row.status, results::RunStatus::kOk) << row.error;
    const results::RunSummary& s = runs.at(name);
    std::map<std::string, int> per_host;
    for (const auto& r : s.ranks) ++per_host[r.host];
    EXPECT_EQ(per_host.size(), 2u);
    if (name.find("ar-hier") == std::string::npos) continue;
    std::string mpi_name = name;
    mpi_name.erase(mpi_name.find("-ar-hier"), 8);
    const std::vector<double> got = losses(s), want = losses(runs.at(mpi_name));
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-5 * std::abs(want[i])) << "step " << i;
    }
  }
  EXPECT_EQ(rows.size(), 6u);
  (void)result;
}

TEST_F(NetnsClusterTest, TcpLinksOverTheVeths) {
  ASSERT_NO_FATAL_FAILURE(bring_up(2));
  const Suite s = parse_suite(
      "name = \"netns-links\"\ntimeout_s = 60\ntcp_interface = \"eth0\"\n"
      "[base]\nmodel = \"tiny\"\nbatch = 4\nblock = 32\nsteps = 6\nwarmup_steps = 1\nthreads = 1\n"
      "mode = \"sharded\"\nranks = 2\nreduce = \"fused\"\nbucket_mb = 0\ntransport = \"tcp\"\n"
      "[grid]\nlinks = [1, 2]\n",
      "links.toml", dir_->path());
  RunnerOptions o = cluster_options("links.db");
  o.tcp_interface.clear();  // the suite's tcp_interface says eth0
  const SuiteResult r = run_suite(s, o);
  ASSERT_EQ(r.runs.size(), 2u);
  for (const auto& c : r.runs)
    ASSERT_EQ(c.row.status, results::RunStatus::kOk)
        << c.row.run_case.case_name << ": " << c.row.error;
  EXPECT_EQ(processes_left(2), "");

  std::vector<results::RunRow> rows;
  const auto by_case = summaries(dir_->path() / "links.db", &rows);
  ASSERT_EQ(rows.size(), 2u);
  std::vector<std::vector<double>> runs;
  for (const auto& row : rows) {
    SCOPED_TRACE(row.run_case.case_name);
    const results::RunSummary& sum = by_case.at(row.run_case.case_name);
    EXPECT_EQ(sum.hosts.size(), 2u);
    // The link count reached every rank, the remote one included.
    const auto& per_rank = sum.transport_per_rank.empty()
                               ? std::vector<std::map<std::string, std::string>>(2, sum.transport)
                               : sum.transport_per_rank;
    ASSERT_EQ(per_rank.size(), 2u);
    for (const auto& t : per_rank) {
      ASSERT_TRUE(t.count("btl_tcp_links"));
      EXPECT_EQ(t.at("btl_tcp_links"), row.run_case.links);
      EXPECT_EQ(t.at("btl_tcp_if_include"), "eth0");
    }
    runs.push_back(losses(sum));
  }
  EXPECT_NE(rows[0].run_case.links, rows[1].run_case.links);
  // More sockets per peer carry the same sums.
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_FALSE(runs[0].empty());
}

TEST_F(NetnsClusterTest, HungJobIsKilledOnEveryHost) {
  ASSERT_NO_FATAL_FAILURE(bring_up(2));
  // Far more steps than fit in the timeout: the runner must kill the job,
  // the rank behind the agent on the other host included.
  const Suite s = parse_suite(
      "name = \"netns-hang\"\ntimeout_s = 2\n"
      "[base]\nmodel = \"tiny\"\nbatch = 4\nblock = 32\nsteps = 100000000\nwarmup_steps = 1\n"
      "threads = 1\nmode = \"sharded\"\nranks = 2\ntransport = \"tcp\"\n[[case]]\nname = "
      "\"hang\"\n",
      "hang.toml", dir_->path());
  const SuiteResult r = run_suite(s, cluster_options("hang.db"));
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].row.status, results::RunStatus::kFailed);
  EXPECT_NE(r.runs[0].row.error.find("timed out"), std::string::npos) << r.runs[0].row.error;
  EXPECT_LT(r.runs[0].seconds, 15.0);
  EXPECT_EQ(processes_left(2), "") << "the killed job left processes in the hosts";

  // Over two seconds of polls the poller saw both ranks: the remote one is a
  // descendant of mpirun too (agent, orted, rank), which is also how the
  // timeout kill reached it.
  auto db = results::ResultsDb::open_for_reading(dir_->path() / "hang.db");
  const auto runs = db.list_runs(db.list_suites().at(0).id);
  ASSERT_EQ(runs.size(), 1u);
  std::set<int> ranks_seen;
  for (const auto& p : db.poller_samples(runs[0].id)) {
    if (p.role == profiler::ProcessRole::kRank) ranks_seen.insert(p.rank);
  }
  EXPECT_EQ(ranks_seen, (std::set<int>{0, 1}));
}

// The tiny model on 2 hosts of one core each, one rank per host; the link
// comes from the suite's grid. bind_to = "core": hosts that own their cores
// must still not be bound by Open MPI (netns-mpirun.sh refuses), the link
// probe included.
constexpr const char* kTwoHostSuite =
    "name = \"netns-hosts\"\ntimeout_s = 90\nbind_to = \"core\"\n"
    "[base]\nmodel = \"tiny\"\nbatch_per_rank = 2\nblock = 32\nsteps = 3\nwarmup_steps = 1\n"
    "threads = 1\nmode = \"sharded\"\nhosts = 2\ncores_per_host = 1\n";

std::string file_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string runner_prefix() { return "tsrun-" + std::to_string(::getpid()); }

// A suite asking for hosts brings up a cluster of their shape, measures its
// link before the first case, replaces it for a case of another link and
// takes the last one down when it ends.
TEST_F(NetnsClusterTest, ASuiteMakesItsClustersMeasuresTheirLinksAndTakesThemDown) {
  const Suite s = parse_suite(std::string(kTwoHostSuite) + "[grid]\nlink = [\"gige\", \"10gbe\"]\n",
                              "hosts.toml", dir_->path());
  const SuiteResult r = run_suite(s, options("hosts.db"));
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_TRUE(testing::namespaces_of(runner_prefix()).empty()) << "a cluster left up";
  EXPECT_FALSE(fs::exists("/run/trainscope-netns/" + runner_prefix()));
  std::vector<results::RunRow> rows;
  summaries(dir_->path() / "hosts.db", &rows);
  ASSERT_EQ(rows.size(), 2u);
  std::map<std::string, double> gbps;
  for (const auto& row : rows) {
    ASSERT_EQ(row.status, results::RunStatus::kOk) << row.run_case.case_name << ": " << row.error;
    EXPECT_EQ(row.run_case.host_count, 2);
    EXPECT_EQ(row.run_case.cores_per_host, 1);
    EXPECT_NE(row.run_case.launcher_command.find("netns-mpirun.sh"), std::string::npos);
    EXPECT_NE(row.run_case.launcher_command.find("--map-by node"), std::string::npos);
    ASSERT_TRUE(row.run_case.link_gbps.has_value()) << row.run_case.case_name;
    ASSERT_TRUE(row.run_case.link_latency_us.has_value());
    EXPECT_GE(*row.run_case.link_latency_us, 0);
    gbps[row.run_case.link] = *row.run_case.link_gbps;
  }
  // Never more than the shaper lets through; one TCP link carries the two
  // directions of the ring at about half the rate each (virtual_cluster_test).
  EXPECT_GT(gbps.at("gige"), 0.2);
  EXPECT_LT(gbps.at("gige"), 1.1);
  EXPECT_GT(gbps.at("10gbe"), 2 * gbps.at("gige"));
}

// --cluster: the runner uses a cluster it is pointed at, leaves it up, and
// skips cases of another shape, saying which.
TEST_F(NetnsClusterTest, AGivenClusterIsUsedAndLeftUpAndOtherShapesAreSkipped) {
  ASSERT_NO_FATAL_FAILURE(bring_up(2, 1, "gige"));
  const Suite s = parse_suite(std::string(kTwoHostSuite) + "[grid]\nlink = [\"gige\", \"10gbe\"]\n",
                              "given.toml", dir_->path());
  RunnerOptions o = options("given.db");
  o.cluster = prefix();
  const SuiteResult r = run_suite(s, o);
  EXPECT_EQ(r.exit_code(), 0);
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[0].row.status, results::RunStatus::kOk) << r.runs[0].row.error;
  EXPECT_EQ(r.runs[0].row.run_case.link, "gige");
  EXPECT_TRUE(r.runs[0].row.run_case.link_gbps.has_value());
  EXPECT_EQ(r.runs[1].row.status, results::RunStatus::kSkipped);
  EXPECT_NE(r.runs[1].row.error.find("needs 2 hosts x 1 cores, link 10gbe; --cluster " + prefix() +
                                     " is 2 hosts x 1 cores, link gige"),
            std::string::npos)
      << r.runs[1].row.error;
  EXPECT_EQ(testing::namespaces_of(prefix()).size(), 3u) << "the given cluster was taken down";
  o.cluster = prefix() + "-none";
  EXPECT_THROW(run_suite(s, o), Error);
}

// Ctrl-C (or a scheduler's SIGTERM) in the middle of a case: the case is
// recorded interrupted, the runner exits 130 and its cluster is gone.
TEST_F(NetnsClusterTest, AnInterruptedSuiteTakesItsClusterDown) {
  const fs::path toml = dir_->path() / "long.toml";
  std::ofstream(toml) << "name = \"netns-long\"\ntimeout_s = 120\n"
                         "[base]\nmodel = \"tiny\"\nbatch = 2\nblock = 32\nsteps = 100000000\n"
                         "threads = 1\nmode = \"sharded\"\nhosts = 2\n[[case]]\nname = \"long\"\n";
  SpawnOptions run;
  run.argv = {testing::trainscope_binary(),       "suite", "run", toml.string(), "--db",
              (dir_->path() / "long.db").string()};
  run.stdout_file = dir_->path() / "out";
  run.stderr_file = dir_->path() / "err";
  run.own_process_group = true;
  ChildProcess runner = spawn(run);
  const std::string its_prefix = "tsrun-" + std::to_string(runner.pid());
  // Until its case runs on the cluster (the status dir's files appear later;
  // a rank process in the second host is enough).
  bool running = false;
  for (int i = 0; i < 600 && !running && !runner.try_wait(); ++i) {
    ::usleep(100000);
    running = !trim(testing::run_shell("ip netns pids " + its_prefix + "-h1 2>/dev/null").output)
                   .empty() &&
              file_text(dir_->path() / "err").find("[1/1]") != std::string::npos;
  }
  ASSERT_TRUE(running) << file_text(dir_->path() / "err");
  ::usleep(500000);
  ::kill(runner.pid(), SIGINT);
  const std::optional<int> code = runner.wait_for(60);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 130) << file_text(dir_->path() / "err");
  EXPECT_TRUE(testing::namespaces_of(its_prefix).empty()) << "the cluster was left up";
  EXPECT_FALSE(fs::exists("/run/trainscope-netns/" + its_prefix));
}

}  // namespace
}  // namespace trainscope::suites
