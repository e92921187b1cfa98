// suites/virtual_cluster.h and what it stands on (scripts/netns-*.sh): hosts
// that own their cores, links of a given rate, bad input that leaves nothing
// behind, reuse of a cluster by its prefix, and the recorded configuration.
//
// All but the parsing tests make clusters (netns_fixture.h: skipped with the
// reason where this machine cannot; nothing of a test's cluster may remain).
#include "suites/virtual_cluster.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base/check.h"
#include "profiler/supervise.h"
#include "results/records.h"
#include "suites/launch_plan.h"
#include "suites/suite_config.h"
#include "tests/suites/netns_fixture.h"

namespace trainscope::suites {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::kScripts;
using testing::run_shell;
using testing::trim;

constexpr const char* kRecorded = R"({
  "prefix": "ts", "subnet": "10.213.0.0/24", "interface": "eth0", "cores_per_host": 2,
  "link": "gige", "rate": "1gbit", "rate_bits_per_second": 1000000000,
  "tbf_burst_bytes": 500000, "tbf_limit_bytes": 1000000,
  "hostfile": "/run/trainscope-netns/ts/hostfile",
  "hosts": [
    {"name": "ts-h0", "address": "10.213.0.1", "cpus": "0-1"},
    {"name": "ts-h1", "address": "10.213.0.2", "cpus": "2-3"}
  ]
})";

TEST(VirtualClusterConfigTest, ReadsWhatTheScriptRecords) {
  const VirtualClusterConfig c = parse_virtual_cluster_config(kRecorded, "cluster.json");
  EXPECT_EQ(c.prefix, "ts");
  EXPECT_EQ(c.interface, "eth0");
  EXPECT_EQ(c.cores_per_host, 2);
  EXPECT_EQ(c.link, "gige");
  EXPECT_EQ(c.rate, "1gbit");
  EXPECT_EQ(c.rate_bits_per_second, 1000000000);
  EXPECT_EQ(c.hostfile, "/run/trainscope-netns/ts/hostfile");
  ASSERT_EQ(c.hosts.size(), 2u);
  EXPECT_EQ(c.hosts[1].name, "ts-h1");
  EXPECT_EQ(c.hosts[1].address, "10.213.0.2");
  EXPECT_EQ(c.hosts[1].cpus, "2-3");
}

TEST(VirtualClusterConfigTest, ErrorsNameTheFileAndField) {
  std::string text = kRecorded;
  text.replace(text.find("\"cores_per_host\": 2"), 19, "\"cores_per_host\": \"2\"");
  try {
    parse_virtual_cluster_config(text, "cluster.json");
    FAIL() << "a string for cores_per_host was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cluster.json: field 'cores_per_host'"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_virtual_cluster_config("{\"prefix\": \"ts\"}", "c.json"), Error);
  EXPECT_THROW(parse_virtual_cluster_config("not json", "c.json"), Error);
}

// The Cpus_allowed_list of a process, "" when it is gone.
std::string cpus_allowed(const std::string& pid) {
  std::ifstream status("/proc/" + pid + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Cpus_allowed_list:", 0) == 0) return trim(line.substr(line.find('\t') + 1));
  }
  return "";
}

class VirtualClusterTest : public testing::NetnsTest {};

TEST_F(VirtualClusterTest, EachHostRunsOnItsOwnCores) {
  if (cores_available() < 2) GTEST_SKIP() << "needs 2 cores to give each of 2 hosts its own";
  ASSERT_NO_FATAL_FAILURE(bring_up(2, /*cores_per_host=*/1));
  const std::vector<std::string> cpus = cluster_->host_cpus();
  ASSERT_EQ(cpus.size(), 2u);
  EXPECT_FALSE(cpus[0].empty());
  EXPECT_NE(cpus[0], cpus[1]);
  EXPECT_EQ(cluster_->config().cores_per_host, 1);

  // A process the agent starts in each host, looked at from outside.
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(host(i));
    run_shell(kScripts + "/netns-rsh-agent.sh " + host(i) + " sleep 30 >/dev/null 2>&1 &");
    // The process is in the namespace from `ip netns exec` on, a moment
    // before the agent's taskset pins it: look until it is pinned (5 s).
    std::string pid;
    for (int tries = 0; tries < 100; ++tries) {
      pid = trim(run_shell("ip netns pids " + host(i) + " | head -1").output);
      if (!pid.empty() && cpus_allowed(pid) == cpus[i]) break;
      run_shell("sleep 0.05");
    }
    ASSERT_FALSE(pid.empty()) << "the agent's process did not appear";
    EXPECT_EQ(cpus_allowed(pid), cpus[i]);
    run_shell("kill " + pid);
    EXPECT_EQ(trim(run_shell(kScripts + "/netns-rsh-agent.sh " + host(i) + " nproc").output), "1");
  }

  // mpirun in the head (host 0) and a rank on each host, through the agent.
  const CommandResult job = mpirun(
      "-np 2 --mca oob_tcp_if_include eth0 sh -c "
      "'echo $(hostname) $(grep Cpus_allowed_list /proc/self/status | cut -f2)'");
  ASSERT_EQ(job.exit_code, 0) << job.output;
  // Only the ranks' lines: mpirun's rsh launcher may add a warning of its own
  // ("plm:rsh: Warning: setpgid(...) failed", a race in Open MPI 4.1).
  std::map<std::string, std::string> seen;
  std::istringstream lines(job.output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string name, list;
    if (words >> name >> list && (name == host(0) || name == host(1))) seen[name] = list;
  }
  EXPECT_EQ(seen, (std::map<std::string, std::string>{{host(0), cpus[0]}, {host(1), cpus[1]}}))
      << job.output;

  // Open MPI's binding sees the whole machine: refused rather than wrong.
  const CommandResult bound = mpirun("-np 2 --bind-to core hostname");
  EXPECT_EQ(bound.exit_code, 2) << bound.output;
  EXPECT_NE(bound.output.find("use --bind-to none"), std::string::npos) << bound.output;
}

// busbw of a 2-rank all-reduce of `bytes` between the two hosts, GB/s.
double measured_busbw(const CommandResult& job, const fs::path& jsonl) {
  EXPECT_EQ(job.exit_code, 0) << job.output;
  std::ifstream in(jsonl);
  std::string line;
  if (!std::getline(in, line)) {
    ADD_FAILURE() << "no row in " << jsonl << ": " << job.output;
    return 0;
  }
  results::AllReduceRow row;
  results::from_json(nlohmann::json::parse(line), row);
  EXPECT_EQ(row.wrong, 0);
  EXPECT_EQ(row.world_size, 2);
  return row.busbw_gbps;
}

TEST_F(VirtualClusterTest, GigeLinkCarriesAboutAGigabitEachWay) {
  ASSERT_NO_FATAL_FAILURE(bring_up(2, 0, "gige"));
  EXPECT_EQ(cluster_->config().link, "gige");
  EXPECT_EQ(cluster_->config().rate_bits_per_second, 1000000000);
  // Both ends of each host's veth are shaped: into the host and out of it.
  for (int i = 0; i < 2; ++i) {
    for (const std::string& qdisc :
         {run_shell("tc -n " + prefix() + "-br qdisc show dev vh" + std::to_string(i)).output,
          run_shell("tc -n " + host(i) + " qdisc show dev eth0").output}) {
      EXPECT_NE(qdisc.find("tbf"), std::string::npos) << qdisc;
      EXPECT_NE(qdisc.find("rate 1Gbit"), std::string::npos) << qdisc;
    }
  }
  EXPECT_NE(script("status --prefix " + prefix()).output.find("link gige (1gbit)"),
            std::string::npos);

  // 4 MiB all-reduces between the hosts. Two TCP links: over one, Open MPI
  // 4.1 carries the two directions of a sendrecv at half the rate each (65 vs
  // 115 MB/s one way, measured on this link), so one link would measure
  // Open MPI, not the link. The bounds hold on a loaded 2-core box: 1 Gbit/s
  // needs little CPU, and an unshaped veth carries several times more here
  // (docs/SUITES.md's table).
  const fs::path jsonl = dir_->path() / "gige.jsonl";
  const CommandResult job = mpirun(
      "-np 2 --bind-to none --mca pml ob1 --mca btl tcp,self --mca btl_tcp_links 2 "
      "--mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 " +
      testing::trainscope_binary() +
      " allreduce-bench --comm mpi --min-bytes 4194304 --max-bytes 4194304 --iters 5 --warmup 2"
      " --jsonl " +
      jsonl.string());
  const double busbw = measured_busbw(job, jsonl);
  const double link_gbps = 0.125;  // 1 Gbit/s in GB/s
  EXPECT_GT(busbw, 0.6 * link_gbps) << job.output;
  EXPECT_LT(busbw, 1.1 * link_gbps) << job.output;
}

// A slowed replay's cluster (replay_time_scale): the link S times slower,
// its token bucket the bytes the full rate had (1.25 MB at 2.5gbe: 4 ms of
// it), so a bucket of gradient passes at once as much as it did.
TEST_F(VirtualClusterTest, ASlowedLinkKeepsItsTokenBucketInBytes) {
  suites::VirtualClusterSpec spec;
  spec.prefix = prefix();
  spec.link = "2.5gbe";
  spec.time_scale = 2.5;
  try {
    cluster_.emplace(suites::VirtualCluster::up(spec));
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  EXPECT_EQ(cluster_->config().rate_bits_per_second, 1000000000);
  const nlohmann::json recorded =
      nlohmann::json::parse(std::ifstream("/run/trainscope-netns/" + prefix() + "/cluster.json"));
  EXPECT_EQ(recorded.value("tbf_burst_bytes", 0), 1250000);
  EXPECT_EQ(recorded.value("time_scale", 0.0), 2.5);
  const std::string qdisc = run_shell("tc -n " + host(0) + " qdisc show dev eth0").output;
  EXPECT_NE(qdisc.find("rate 1Gbit"), std::string::npos) << qdisc;
  // Refused with a link or without one (an unlimited link has no rate to slow).
  for (const char* args : {"--link gige --time-scale 0.5", "--time-scale fast"}) {
    const CommandResult bad = script("up 2 --prefix " + prefix() + "x " + std::string(args));
    EXPECT_EQ(bad.exit_code, 2) << args << ": " << bad.output;
    EXPECT_NE(bad.output.find("a number of at least 1"), std::string::npos) << bad.output;
    EXPECT_TRUE(testing::namespaces_of(prefix() + "x").empty()) << args;
    if (bad.exit_code == 0) script("down --prefix " + prefix() + "x");
  }
}

// Every way `up` can be told something wrong: exit code 2, the script's
// message, and no namespace or state of the prefix left.
TEST_F(VirtualClusterTest, BadInputIsExitCode2AndLeavesNothing) {
  // Two hosts with these cores, link and rate must be refused with `message`.
  auto refused = [&](int cores_per_host, const std::string& link, const std::string& rate,
                     const std::string& message) {
    SCOPED_TRACE(message);
    VirtualClusterSpec spec;
    spec.prefix = prefix();
    spec.cores_per_host = cores_per_host;
    spec.link = link;
    spec.rate = rate;
    try {
      VirtualCluster::up(spec);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), kExitBadInput) << e.what();
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
    EXPECT_TRUE(testing::namespaces_of(prefix()).empty());
    EXPECT_FALSE(fs::exists("/run/trainscope-netns/" + prefix()));
  };
  refused(0, "warp-drive", "", "--link 'warp-drive': unknown profile");
  refused(0, "", "fast", "--rate 'fast': not a rate in tc's syntax");
  refused(0, "", "100kbit", "below 1mbit");
  const int cores = cores_available();
  refused(cores, "", "",
          "needs 2 x " + std::to_string(cores) + " = " + std::to_string(2 * cores) +
              " cores, but this process may use " + std::to_string(cores));

  // A rate tc itself refuses, after the namespaces were made: a tc that
  // refuses every qdisc stands in for one.
  const fs::path bin = dir_->path() / "bin";
  fs::create_directories(bin);
  std::ofstream(bin / "tc") << "#!/bin/sh\n"
                               "case \"$*\" in *qdisc\\ replace*) "
                               "echo 'Error: Invalid argument' >&2; exit 2;; esac\n"
                               "exec "
                            << find_program("tc") << " \"$@\"\n";
  fs::permissions(bin / "tc", fs::perms::owner_all);
  const std::string path = getenv("PATH");
  ::setenv("PATH", (bin.string() + ":" + path).c_str(), 1);
  refused(0, "gige", "", "tc refused the link rate '1gbit'");
  ::setenv("PATH", path.c_str(), 1);
}

TEST_F(VirtualClusterTest, AClusterIsReusedByItsPrefixAndRemovedByItsMaker) {
  ASSERT_NO_FATAL_FAILURE(bring_up(2, 0, "10gbe"));
  // Another up() of the same prefix would take it down when it ends.
  try {
    VirtualClusterSpec again;
    again.prefix = prefix();
    VirtualCluster::up(again);
    ADD_FAILURE() << "a second up() of one prefix was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exists already"), std::string::npos) << e.what();
  }
  {
    const VirtualCluster reused = VirtualCluster::attach(prefix());
    const VirtualClusterConfig& c = reused.config();
    EXPECT_EQ(c.link, "10gbe");
    EXPECT_EQ(c.rate, "10gbit");
    EXPECT_EQ(c.rate_bits_per_second, 10000000000);
    EXPECT_EQ(c.cores_per_host, 0);
    ASSERT_EQ(c.hosts.size(), 2u);
    EXPECT_EQ(c.hosts[1].name, host(1));
    EXPECT_EQ(c.hosts[1].address, "10.213.0.2");
    EXPECT_EQ(c.hosts[1].cpus, "");
    EXPECT_EQ(reused.tcp_interface(), "eth0");
    EXPECT_TRUE(fs::exists(reused.mpirun()));
    const std::vector<HostEntry> hosts = load_hostfile(reused.hostfile());
    ASSERT_EQ(hosts.size(), 2u);
    EXPECT_EQ(hosts[0].host, host(0));
    EXPECT_EQ(hosts[0].slots, 1);
  }
  // The attached object was not the maker: the cluster is still there.
  EXPECT_EQ(testing::namespaces_of(prefix()).size(), 3u);

  // The maker's destructor takes it down.
  cluster_.reset();
  EXPECT_TRUE(testing::namespaces_of(prefix()).empty());
  EXPECT_FALSE(fs::exists("/run/trainscope-netns/" + prefix()));
  EXPECT_THROW(VirtualCluster::attach(prefix()), Error);
}

// `trainscope cluster check` over a 2-host cluster behind gige links: both
// hosts pass, and the pair's all-reduce is bounded by the link. With a host
// that does not exist added, that host fails and the others' pair is still
// measured.
TEST_F(VirtualClusterTest, ClusterCheckReachesEveryHostAndMeasuresThePair) {
  ASSERT_NO_FATAL_FAILURE(bring_up(2, 0, "gige"));
  const std::string check = testing::trainscope_binary() + " cluster check --mpirun " +
                            cluster_->mpirun() + " --tcp-interface eth0 --hostfile ";
  const CommandResult ok = run_shell(check + cluster_->hostfile().string());
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  for (const VirtualHost& h : cluster_->config().hosts) {
    // host, its own host name, version, revision, interface, address, status
    const std::string row = " " + h.name + " " + h.name + " ";
    const auto at = ok.output.find(row);
    ASSERT_NE(at, std::string::npos) << ok.output;
    const std::string line = ok.output.substr(at, ok.output.find('\n', at) - at);
    EXPECT_NE(line.find(" eth0 "), std::string::npos) << line;
    EXPECT_NE(line.find(" " + h.address + "  ok"), std::string::npos) << line;
  }
  // The pair's row: hosts, size, count, type, redop, time, algbw, busbw, #wrong.
  const auto at = ok.output.find(" " + host(0) + " " + host(1) + " ");
  ASSERT_NE(at, std::string::npos) << ok.output;
  std::istringstream row(ok.output.substr(at));
  std::string a, b, type, redop;
  long long size = 0, count = 0, wrong = -1;
  double time_us = 0, algbw = 0, busbw = 0;
  row >> a >> b >> size >> count >> type >> redop >> time_us >> algbw >> busbw >> wrong;
  EXPECT_EQ(size, 4194304);
  EXPECT_EQ(wrong, 0);
  // One TCP link: Open MPI gets about half of 125 MB/s each way (see above);
  // never more than the link.
  EXPECT_GT(busbw, 0.02) << ok.output;
  EXPECT_LT(busbw, 1.1 * 0.125) << ok.output;
  EXPECT_NE(ok.output.find("\n# OK\n"), std::string::npos) << ok.output;

  const fs::path with_missing = dir_->path() / "hosts";
  std::ofstream(with_missing) << host(0) << "\n" << host(1) << "\n" << host(7) << "\n";
  const CommandResult bad = run_shell(check + with_missing.string());
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  const auto missing = bad.output.find(" " + host(7) + " ");
  ASSERT_NE(missing, std::string::npos) << bad.output;
  const std::string line = bad.output.substr(missing, bad.output.find('\n', missing) - missing);
  EXPECT_NE(
      line.find(" -  FAILED: not reached: exit code 2: netns-mpirun.sh: no network namespace '" +
                host(7) + "'"),
      std::string::npos)
      << line;
  EXPECT_NE(bad.output.find(" " + host(0) + " " + host(1) + " "), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("# FAILED: 1 of 3 hosts, 0 pairs, the job over all hosts"),
            std::string::npos)
      << bad.output;
  EXPECT_EQ(processes_left(2), "");
}

}  // namespace
}  // namespace trainscope::suites
