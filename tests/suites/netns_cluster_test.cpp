// Multi-host runs for real, on one machine: scripts/netns-cluster.sh makes a
// virtual cluster of network namespaces (hosts P-h0, P-h1 behind a bridge in
// P-br), scripts/netns-mpirun.sh runs mpirun inside P-h0 and reaches P-h1
// through scripts/netns-rsh-agent.sh. The suite runner runs tiny suites with a
// hostfile naming both hosts; the results must name both hosts, match a
// one-host run of the same cases loss for loss, and carry poller samples.
//
// Traffic stays inside the namespaces this test makes (and 127.0.0.0/8 for
// the one-host reference): nothing is added to the root namespace, which the
// script test checks. Each test makes its own cluster under a prefix unique
// to this process and always tears it down (VirtualCluster is RAII).
//
// Skipped, not failed, where the machine cannot make namespaces: not root, no
// `ip` or `unshare`, or `ip netns add` refused (a container without
// CAP_NET_ADMIN). Once the cluster is up, any failure of the job fails.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/check.h"
#include "results/results_db.h"
#include "suites/runner.h"

namespace trainscope::suites {
namespace {

namespace fs = std::filesystem;

const std::string kScripts = TRAINSCOPE_SOURCE_DIR "/scripts";

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

CommandResult run_command(const std::string& command) {
  CommandResult r;
  std::FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool on_path(const std::string& name) {
  return run_command("command -v " + name + " >/dev/null").exit_code == 0;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

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
  return run_command("ip -o link show | awk -F': ' '{print $2}'; ip -o addr show | awk '{print $2, $4}'")
      .output;
}

// A virtual cluster for the lifetime of the object: `down` on destruction,
// whatever state `up` reached.
class VirtualCluster {
 public:
  explicit VirtualCluster(std::string prefix) : prefix_(std::move(prefix)) {}
  ~VirtualCluster() { down(); }
  VirtualCluster(const VirtualCluster&) = delete;
  VirtualCluster& operator=(const VirtualCluster&) = delete;

  CommandResult up(int hosts) { return script("up " + std::to_string(hosts)); }
  CommandResult down() { return script("down"); }
  CommandResult script(const std::string& args) const {
    return run_command(kScripts + "/netns-cluster.sh " + args + " --prefix " + prefix_);
  }
  const std::string& prefix() const { return prefix_; }
  std::string host(int i) const { return prefix_ + "-h" + std::to_string(i); }
  // This cluster's namespaces, sorted.
  std::vector<std::string> namespaces() const {
    std::istringstream in(run_command("ip netns list").output);
    std::vector<std::string> names;
    std::string line;
    while (std::getline(in, line)) {
      const std::string name = line.substr(0, line.find(' '));
      if (name.rfind(prefix_ + "-", 0) == 0) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  // Processes still inside the host namespaces ("" when none).
  std::string processes_left(int hosts) const {
    std::string left;
    for (int i = 0; i < hosts; ++i) left += trim(run_command("ip netns pids " + host(i)).output);
    return left;
  }

 private:
  std::string prefix_;
};

// Clusters left by a test process that was killed (a ctest timeout skips
// every destructor): prefix tsn<pid> with no such process any more.
void remove_clusters_of_dead_tests() {
  std::istringstream in(run_command("ip netns list").output);
  std::set<std::string> prefixes;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("tsn", 0) != 0) continue;
    const std::string prefix = line.substr(0, line.find('-'));
    const std::string digits = prefix.substr(3);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    if (::kill(std::stoi(digits), 0) != 0 && errno == ESRCH) prefixes.insert(prefix);
  }
  for (const auto& p : prefixes) VirtualCluster(p).down();
}

class NetnsClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: network namespaces need CAP_NET_ADMIN";
    if (!on_path("ip")) GTEST_SKIP() << "needs the `ip` command (iproute2)";
    if (!on_path("unshare")) GTEST_SKIP() << "needs `unshare` (util-linux)";
    // Can this machine make a namespace at all? A container without
    // CAP_NET_ADMIN cannot; that is a skip, anything else is the script's bug.
    const std::string probe = "tsprobe" + std::to_string(::getpid());
    const CommandResult add = run_command("ip netns add " + probe);
    if (add.exit_code != 0) {
      GTEST_SKIP() << "`ip netns add` is not permitted here: " << trim(add.output);
    }
    run_command("ip netns delete " + probe);
    remove_clusters_of_dead_tests();

    dir_ = fs::temp_directory_path() /
           ("trainscope-netns-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    sink_ = std::fopen("/dev/null", "w");
    cluster_ = std::make_unique<VirtualCluster>("tsn" + std::to_string(::getpid()));
  }
  void TearDown() override {
    if (cluster_) {
      const CommandResult down = cluster_->down();
      EXPECT_EQ(down.exit_code, 0) << down.output;
      EXPECT_TRUE(cluster_->namespaces().empty()) << "namespaces left behind";
      EXPECT_FALSE(fs::exists("/etc/netns/" + cluster_->host(0))) << "/etc/netns entry left behind";
      cluster_.reset();
    }
    if (sink_) std::fclose(sink_);
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Brings up `hosts` hosts and writes a hostfile with one slot per host.
  void bring_up(int hosts) {
    const CommandResult up = cluster_->up(hosts);
    ASSERT_EQ(up.exit_code, 0) << up.output;
    std::ofstream f(dir_ / "hosts");
    for (int i = 0; i < hosts; ++i) f << cluster_->host(i) << " slots=1\n";
  }

  RunnerOptions options(const std::string& db_name) const {
    RunnerOptions o;
    o.db_path = dir_ / db_name;
    o.trainscope_binary = TRAINSCOPE_BINARY_DIR "/trainscope";
    o.command_line = "netns_cluster_test";
    o.poll_interval_s = 0.05;
    o.progress = sink_;
    o.out = sink_;
    return o;
  }
  RunnerOptions cluster_options(const std::string& db_name) const {
    RunnerOptions o = options(db_name);
    o.hostfile = dir_ / "hosts";
    o.mpirun = kScripts + "/netns-mpirun.sh";
    o.tcp_interface = "eth0";
    return o;
  }

  fs::path dir_;
  std::FILE* sink_ = nullptr;
  std::unique_ptr<VirtualCluster> cluster_;
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
  const CommandResult again = cluster_->up(2);  // idempotent
  ASSERT_EQ(again.exit_code, 0) << again.output;
  const std::vector<std::string> expected = {cluster_->prefix() + "-br", cluster_->host(0),
                                             cluster_->host(1)};
  EXPECT_EQ(cluster_->namespaces(), expected);
  // The root namespace got no address and no interface.
  EXPECT_EQ(root_namespace_view(), root_before);

  // Every host name resolves, inside every host, to the address that host has.
  for (int from = 0; from < 2; ++from) {
    for (int to = 0; to < 2; ++to) {
      const std::string addr =
          trim(run_command("ip -n " + cluster_->host(to) +
                           " -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1")
                   .output);
      ASSERT_FALSE(addr.empty());
      const std::string resolved = trim(run_command("ip netns exec " + cluster_->host(from) +
                                                    " getent ahostsv4 " + cluster_->host(to) +
                                                    " | awk 'NR==1{print $1}'")
                                            .output);
      EXPECT_EQ(resolved, addr) << cluster_->host(from) << " -> " << cluster_->host(to);
    }
  }

  // The agent runs the command in the host's namespaces, with the host's name,
  // accepting ssh-style options before the host; the root's name is untouched.
  const CommandResult agent = run_command(
      kScripts + "/netns-rsh-agent.sh -x -o BatchMode=yes " + cluster_->host(1) +
      " cat /proc/sys/kernel/hostname ';' ip -4 -o addr show dev eth0 '|' wc -l");
  ASSERT_EQ(agent.exit_code, 0) << agent.output;
  EXPECT_EQ(agent.output, cluster_->host(1) + "\n1\n");
  EXPECT_EQ(trim(run_command("cat /proc/sys/kernel/hostname").output), hostname_before);
  EXPECT_EQ(run_command(kScripts + "/netns-rsh-agent.sh " + cluster_->prefix() + "-nohost true").exit_code,
            255);
  EXPECT_EQ(run_command(kScripts + "/netns-rsh-agent.sh " + cluster_->host(0) + " exit 7").exit_code, 7);

  // down removes everything, processes left inside included, and is idempotent.
  run_command("ip netns exec " + cluster_->host(1) + " sleep 300 >/dev/null 2>&1 &");
  const std::string left = cluster_->processes_left(2);
  ASSERT_FALSE(left.empty());
  CommandResult down = cluster_->down();
  ASSERT_EQ(down.exit_code, 0) << down.output;
  EXPECT_TRUE(cluster_->namespaces().empty());
  EXPECT_FALSE(running(std::stoi(left))) << "process " << left << " survived down";
  EXPECT_FALSE(fs::exists("/etc/netns/" + cluster_->host(0)));
  EXPECT_EQ(cluster_->down().exit_code, 0);

  // ... also after a partial `up`: a lone namespace and hosts file.
  ASSERT_EQ(run_command("ip netns add " + cluster_->host(0)).exit_code, 0);
  fs::create_directories("/etc/netns/" + cluster_->host(0));
  std::ofstream("/etc/netns/" + cluster_->host(0) + "/hosts") << "127.0.0.1 localhost\n";
  down = cluster_->down();
  ASSERT_EQ(down.exit_code, 0) << down.output;
  EXPECT_TRUE(cluster_->namespaces().empty());
  EXPECT_FALSE(fs::exists("/etc/netns/" + cluster_->host(0)));
  EXPECT_EQ(root_namespace_view(), root_before);
}

TEST_F(NetnsClusterTest, SuiteOverTwoHostsMatchesOneHost) {
  ASSERT_NO_FATAL_FAILURE(bring_up(2));
  const Suite cluster_suite = parse_suite(kTinySuite, "netns.toml", dir_);

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
    ASSERT_EQ(c.row.status, results::RunStatus::kOk) << c.row.run_case.case_name << ": " << c.row.error;
  }
  EXPECT_EQ(cluster_->processes_left(2), "") << "the jobs left processes in the hosts";
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename().string().rfind("trainscope-suite-", 0), std::string::npos)
        << entry.path() << " left behind";
  }

  // The same cases on this machine alone, over loopback.
  const SuiteResult local = run_suite(cluster_suite, options("local.db"));
  for (const auto& c : local.runs) {
    ASSERT_EQ(c.row.status, results::RunStatus::kOk) << c.row.run_case.case_name << ": " << c.row.error;
  }

  std::vector<results::RunRow> rows;
  const auto multi = summaries(dir_ / "cluster.db", &rows);
  const auto single = summaries(dir_ / "local.db");
  ASSERT_EQ(multi.size(), 2u);
  ASSERT_EQ(single.size(), 2u);
  auto db = results::ResultsDb::open_for_reading(dir_ / "cluster.db");
  for (const auto& row : rows) {
    const std::string& name = row.run_case.case_name;
    SCOPED_TRACE(name);
    EXPECT_NE(row.run_case.launcher_command.find("--hostfile"), std::string::npos);
    EXPECT_NE(row.run_case.launcher_command.find("btl_tcp_if_include eth0"), std::string::npos)
        << row.run_case.launcher_command;
    // Rank 0 wrote the summary beside the database (shared on a real
    // cluster more often than /tmp), and the runner removed the folder.
    EXPECT_NE(row.run_case.launcher_command.find("--summary " + (dir_ / "trainscope-suite-").string()),
              std::string::npos)
        << row.run_case.launcher_command;
    const results::RunSummary& s = multi.at(name);
    ASSERT_EQ(s.world_size, 2);

    // Two hosts, named after the namespaces; by-slot mapping puts rank r on
    // the hostfile's r-th host.
    std::vector<std::string> hosts = s.hosts;
    std::sort(hosts.begin(), hosts.end());
    EXPECT_EQ(hosts, (std::vector<std::string>{cluster_->host(0), cluster_->host(1)}));
    ASSERT_EQ(s.ranks.size(), 2u);
    for (const auto& r : s.ranks) EXPECT_EQ(r.host, cluster_->host(r.rank));

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

TEST_F(NetnsClusterTest, TcpLinksOverTheVeths) {
  ASSERT_NO_FATAL_FAILURE(bring_up(2));
  const Suite s = parse_suite(
      "name = \"netns-links\"\ntimeout_s = 60\ntcp_interface = \"eth0\"\n"
      "[base]\nmodel = \"tiny\"\nbatch = 4\nblock = 32\nsteps = 6\nwarmup_steps = 1\nthreads = 1\n"
      "mode = \"sharded\"\nranks = 2\nreduce = \"fused\"\nbucket_mb = 0\ntransport = \"tcp\"\n"
      "[grid]\nlinks = [1, 2]\n",
      "links.toml", dir_);
  RunnerOptions o = cluster_options("links.db");
  o.tcp_interface.clear();  // the suite's tcp_interface says eth0
  const SuiteResult r = run_suite(s, o);
  ASSERT_EQ(r.runs.size(), 2u);
  for (const auto& c : r.runs) ASSERT_EQ(c.row.status, results::RunStatus::kOk) << c.row.run_case.case_name << ": " << c.row.error;
  EXPECT_EQ(cluster_->processes_left(2), "");

  std::vector<results::RunRow> rows;
  const auto by_case = summaries(dir_ / "links.db", &rows);
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
      "threads = 1\nmode = \"sharded\"\nranks = 2\ntransport = \"tcp\"\n[[case]]\nname = \"hang\"\n",
      "hang.toml", dir_);
  const SuiteResult r = run_suite(s, cluster_options("hang.db"));
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].row.status, results::RunStatus::kFailed);
  EXPECT_NE(r.runs[0].row.error.find("timed out"), std::string::npos) << r.runs[0].row.error;
  EXPECT_LT(r.runs[0].seconds, 15.0);
  EXPECT_EQ(cluster_->processes_left(2), "") << "the killed job left processes in the hosts";

  // Over two seconds of polls the poller saw both ranks: the remote one is a
  // descendant of mpirun too (agent, orted, rank), which is also how the
  // timeout kill reached it.
  auto db = results::ResultsDb::open_for_reading(dir_ / "hang.db");
  const auto runs = db.list_runs(db.list_suites().at(0).id);
  ASSERT_EQ(runs.size(), 1u);
  std::set<int> ranks_seen;
  for (const auto& p : db.poller_samples(runs[0].id)) {
    if (p.role == profiler::ProcessRole::kRank) ranks_seen.insert(p.rank);
  }
  EXPECT_EQ(ranks_seen, (std::set<int>{0, 1}));
}

}  // namespace
}  // namespace trainscope::suites
