// `trainscope cluster check`: whether the hosts of a hostfile make a cluster
// trainscope can run on, and what the link between each pair carries. The
// walkthrough's `mpirun --hostfile hostfile hostname`, made useful: one rank
// per host reports its host name, trainscope version and git revision and
// the TCP interface there (`trainscope cluster probe`, hidden: what the ranks
// run); then a 2-rank all-reduce per pair of hosts. Tables and verdicts in
// suites/cluster_check.h.
//
//   trainscope cluster check --hostfile hosts --tcp-interface eth0
//   trainscope cluster check --hostfile /run/trainscope-netns/ts/hostfile
//       --mpirun scripts/netns-mpirun.sh --tcp-interface eth0   (a virtual cluster)
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/validators.h"
#include "comm/communicator.h"
#include "base/atomic_file.h"
#include "base/check.h"
#include "profiler/supervise.h"
#include "suites/allreduce_bench.h"
#include "suites/cluster_check.h"
#include "suites/launch_plan.h"
#include "suites/suite_config.h"

namespace trainscope::cli {
namespace {

namespace fs = std::filesystem;

struct CheckFlags {
  std::string hostfile;
  std::string mpirun = "mpirun";
  std::string tcp_interface = "lo";
  int64_t bytes = 4 << 20;
  int iters = 10;
  int warmup = 3;
  int links = 1;
  double timeout_s = 120;
};

constexpr const char* kCheckHelp =
    R"(Reach every host of a hostfile with mpirun, one rank per host (--map-by node), and
report its host name, trainscope version and git revision, and whether the TCP
interface exists there and its address; then measure an all-reduce (nccl-tests
columns; busbw = algbw x 2(n-1)/n, which for 2 ranks is algbw) between each pair of
hosts that passed, one pair at a time. Over one TCP link Open MPI carries the two
directions of an exchange at about half a link's rate each (docs/SUITES.md);
--links 2 measures closer to the link.
Fails (exit code 1) when a host is not reached, lacks the interface or an address
on it, runs another version or revision than this one, is the same machine as
another host, or a pair's job fails; the tables say which. Bad input (a hostfile
error, an unknown --mpirun, lo with other hosts) is exit code 2. Every host needs
this binary at the same path, as a suite run does.)";

// What every job of one check shares.
struct Launch {
  // Error (bad input) when --mpirun cannot run.
  explicit Launch(const CheckFlags& f)
      : mpirun(suites::resolve_executable(f.mpirun, "--mpirun")),
        trainscope(fs::read_symlink("/proc/self/exe").string()),
        tcp_interface(f.tcp_interface),
        timeout_s(f.timeout_s) {
    if (::geteuid() == 0) env = {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};
  }

  std::string mpirun;      // resolved
  std::string trainscope;  // this binary, at the same path on every host
  std::string tcp_interface;
  double timeout_s = 0;
  std::vector<std::string> env;
  ScopedTempDir dir{"trainscope-cluster-check"};  // the jobs' hostfiles
};

// A hostfile of `hosts`, one slot each: one rank per host whatever the
// user's slot counts.
fs::path write_hostfile(const Launch& launch, const std::string& name,
                        const std::vector<suites::HostEntry>& hosts) {
  const fs::path path = launch.dir.path() / name;
  suites::write_hostfile(path, hosts, /*slots=*/1);
  return path;
}

// mpirun -np <hosts> over `hostfile`, each rank running `trainscope cluster
// probe probe_args...`.
profiler::CompletedRun run_probe_job(const Launch& launch, const fs::path& hostfile, int ranks,
                                     const std::vector<std::string>& mca_args,
                                     const std::vector<std::string>& probe_args) {
  SpawnOptions job;
  job.argv = {launch.mpirun, "-np", std::to_string(ranks), "--hostfile", hostfile.string()};
  job.argv.insert(job.argv.end(), {"--map-by", "node", "--bind-to", "none"});
  job.argv.insert(job.argv.end(), mca_args.begin(), mca_args.end());
  job.argv.insert(job.argv.end(), {launch.trainscope, "cluster", "probe"});
  job.argv.insert(job.argv.end(), probe_args.begin(), probe_args.end());
  job.env = launch.env;
  job.own_process_group = true;
  return profiler::run_to_completion(job, launch.timeout_s);
}

// Why a job failed, in one line: the first line of its stderr that says
// something (Open MPI frames its messages in lines of dashes).
std::string failure_of(const profiler::CompletedRun& run, double timeout_s) {
  if (run.timed_out) return fmt::format("no answer within {:g} s (killed)", timeout_s);
  std::istringstream err(run.err);
  for (std::string line; std::getline(err, line);) {
    if (line.find_first_not_of("- \t") != std::string::npos) {
      return fmt::format("exit code {}: {}", run.exit_code, line);
    }
  }
  return fmt::format("exit code {}", run.exit_code);
}

// Every host's report: from one job over all hosts, as a real job would be
// launched; the hosts missing from it are then tried one by one, without
// pinning Open MPI's own traffic to the interface (so a host that lacks it
// is reached, and says so), to name the hosts at fault.
std::vector<suites::HostCheck> check_hosts(const Launch& launch,
                                           const std::vector<suites::HostEntry>& hosts,
                                           std::string* joint_failure) {
  const std::vector<std::string> probe = {"--tcp-interface", launch.tcp_interface};
  const profiler::CompletedRun all = run_probe_job(
      launch, write_hostfile(launch, "all-hosts", hosts), static_cast<int>(hosts.size()),
      {"--mca", "oob_tcp_if_include", launch.tcp_interface}, probe);
  std::map<int, suites::HostReport> reports = suites::parse_host_reports(all.out);
  if (all.exit_code != 0) *joint_failure = failure_of(all, launch.timeout_s);
  std::vector<suites::HostCheck> checks;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    suites::HostCheck& c = checks.emplace_back(suites::HostCheck{hosts[i].host, {}, false, {}});
    if (auto r = reports.find(static_cast<int>(i)); r != reports.end()) {
      c.report = r->second;
      continue;
    }
    const profiler::CompletedRun alone = run_probe_job(
        launch, write_hostfile(launch, "host-" + std::to_string(i), {hosts[i]}), 1, {}, probe);
    const std::map<int, suites::HostReport> own = suites::parse_host_reports(alone.out);
    if (own.count(0) != 0) {
      c.report = own.at(0);
      c.reached_alone = true;
    } else {
      c.problem = "not reached: " + failure_of(alone, launch.timeout_s);
    }
  }
  return checks;
}

// The all-reduce between every pair of `hosts`, one pair at a time (pairs
// measured at once would share this machine's, or a switch's, capacity).
std::vector<suites::PairCheck> measure_pairs(const Launch& launch, const CheckFlags& f,
                                             const std::vector<suites::HostEntry>& hosts) {
  std::vector<std::string> mca;
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"pml", "ob1"},
           {"btl", "tcp,self"},
           {"btl_tcp_links", std::to_string(f.links)},
           {"btl_tcp_if_include", launch.tcp_interface},
           {"oob_tcp_if_include", launch.tcp_interface}}) {
    mca.insert(mca.end(), {"--mca", name, value});
  }
  const std::vector<std::string> probe = {"--allreduce-bytes", std::to_string(f.bytes),
                                          "--iters",           std::to_string(f.iters),
                                          "--warmup",          std::to_string(f.warmup)};
  std::vector<suites::PairCheck> pairs;
  for (std::size_t a = 0; a < hosts.size(); ++a) {
    for (std::size_t b = a + 1; b < hosts.size(); ++b) {
      suites::PairCheck& p =
          pairs.emplace_back(suites::PairCheck{hosts[a].host, hosts[b].host, {}, {}});
      const fs::path file =
          write_hostfile(launch, fmt::format("pair-{}-{}", a, b), {hosts[a], hosts[b]});
      const profiler::CompletedRun run = run_probe_job(launch, file, 2, mca, probe);
      p.row = suites::parse_pair_row(run.out);
      if (run.exit_code != 0 || !p.row) {
        p.problem = failure_of(run, launch.timeout_s);
      } else if (p.row->wrong != 0) {
        p.problem = fmt::format("{} elements summed wrong", p.row->wrong);
      }
    }
  }
  return pairs;
}

// Measures the pairs of `good` hosts and prints their table; how many failed.
int check_pairs(const Launch& launch, const CheckFlags& f,
                const std::vector<suites::HostEntry>& good) {
  if (good.size() < 2) {
    std::printf("# no pair to measure: %zu host%s passed\n", good.size(),
                good.size() == 1 ? "" : "s");
    return 0;
  }
  std::printf(
      "# all-reduce between each pair of hosts that passed, one pair at a time: 2 ranks\n"
      "# (one per host), in place, float sum, %d warm-up + %d timed calls, btl tcp, %d link%s\n",
      f.warmup, f.iters, f.links, f.links == 1 ? "" : "s");
  std::fflush(stdout);
  const std::vector<suites::PairCheck> pairs = measure_pairs(launch, f, good);
  std::fputs(suites::format_pair_table(pairs).c_str(), stdout);
  int failed = 0;
  for (const auto& p : pairs) failed += !p.problem.empty();
  return failed;
}

void run_check(const CheckFlags& f) {
  const std::vector<suites::HostEntry> hosts = suites::load_hostfile(f.hostfile);
  // Over lo, other hosts could never call back: refused, as by `suite run`.
  suites::check_hosts_reachable(hosts, f.tcp_interface, f.hostfile);
  const Launch launch(f);
  std::printf(
      "# trainscope cluster check: %zu host%s of %s, tcp interface %s, mpirun %s\n"
      "# here: trainscope %s (git %s)\n#\n",
      hosts.size(), hosts.size() == 1 ? "" : "s", f.hostfile.c_str(), f.tcp_interface.c_str(),
      launch.mpirun.c_str(), TRAINSCOPE_VERSION, TRAINSCOPE_GIT_REVISION);
  std::fflush(stdout);

  std::string joint_failure;
  std::vector<suites::HostCheck> checks = check_hosts(launch, hosts, &joint_failure);
  suites::judge_hosts(checks, TRAINSCOPE_VERSION, TRAINSCOPE_GIT_REVISION);
  std::fputs(suites::format_host_table(checks).c_str(), stdout);
  if (!joint_failure.empty()) {
    std::printf("# the job over all hosts failed: %s\n", joint_failure.c_str());
  }
  std::vector<suites::HostEntry> good;  // the hosts that passed: their pairs are measured
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    if (checks[i].problem.empty()) good.push_back(hosts[i]);
  }
  const int failed_hosts = static_cast<int>(hosts.size() - good.size());
  std::printf("#\n");

  const int failed_pairs = check_pairs(launch, f, good);
  if (failed_hosts + failed_pairs + !joint_failure.empty() > 0) {
    std::printf("# FAILED: %d of %zu hosts, %d pairs%s\n", failed_hosts, hosts.size(), failed_pairs,
                joint_failure.empty() ? "" : ", the job over all hosts");
    throw SilentExit{kExitFailure};
  }
  std::printf("# OK\n");
}

// What each rank of a check's job runs: its host's report (no MPI: launched
// like `hostname`), or with --allreduce-bytes the all-reduce of a pair.
void run_probe(const std::string& tcp_interface, const suites::AllReduceOptions& allreduce) {
  if (allreduce.min_bytes == 0) {
    const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
    nlohmann::json j;
    results::to_json(j, suites::probe_this_host(rank ? std::atoi(rank) : 0, tcp_interface,
                                                TRAINSCOPE_VERSION, TRAINSCOPE_GIT_REVISION));
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  auto comm = comm::make_communicator("mpi");
  const auto rows = suites::run_allreduce_sweep(*comm, allreduce, nullptr);
  if (comm->rank() == 0 && !rows.empty()) {
    nlohmann::json j;
    results::to_json(j, rows.front());
    std::printf("%s\n", j.dump().c_str());
  }
}

void add_probe(CLI::App* cluster) {
  struct ProbeFlags {
    std::string tcp_interface = "lo";
    suites::AllReduceOptions allreduce;
  };
  auto f = std::make_shared<ProbeFlags>();
  f->allreduce.min_bytes = 0;  // no all-reduce unless asked
  CLI::App* probe = cluster->add_subcommand(
      "probe",
      "What each rank of `cluster check` runs: one JSON line about its host, or with\n"
      "--allreduce-bytes (under mpirun, 2 ranks) rank 0's all-reduce row");
  probe->group("");  // internal: not listed in --help
  probe->add_option("--tcp-interface", f->tcp_interface, "The interface to look up");
  probe->add_option("--allreduce-bytes", f->allreduce.min_bytes, "Message size")
      ->check(whole_number<int64_t>(4));
  probe->add_option("--iters", f->allreduce.iters)->check(whole_number<int>(1));
  probe->add_option("--warmup", f->allreduce.warmup)->check(whole_number<int>(0));
  probe->callback([f] {
    f->allreduce.max_bytes = f->allreduce.min_bytes;
    run_probe(f->tcp_interface, f->allreduce);
  });
}

}  // namespace

void add_cluster_command(CLI::App& app) {
  CLI::App* cluster =
      app.add_subcommand("cluster", "Check the hosts of a hostfile before running on them");
  cluster->require_subcommand(1);
  auto f = std::make_shared<CheckFlags>();
  CLI::App* check = cluster->add_subcommand("check", kCheckHelp);
  check
      ->add_option("--hostfile", f->hostfile,
                   "Open MPI hostfile (`host slots=N` lines); slot "
                   "counts do not matter here")
      ->required()
      ->check(CLI::ExistingFile);
  check
      ->add_option("--mpirun", f->mpirun,
                   "mpirun to launch with (e.g. scripts/netns-mpirun.sh for a virtual cluster)")
      ->capture_default_str();
  check
      ->add_option("--tcp-interface", f->tcp_interface,
                   "The interface the hosts share, for Open MPI's TCP traffic (lo only reaches "
                   "this machine)")
      ->capture_default_str();
  check->add_option("--bytes", f->bytes, "All-reduce message size per pair, in bytes")
      ->check(whole_number<int64_t>(4))
      ->capture_default_str();
  check->add_option("--iters", f->iters, "Timed all-reduces per pair")
      ->check(whole_number<int>(1))
      ->capture_default_str();
  check->add_option("--warmup", f->warmup, "Untimed all-reduces per pair first")
      ->check(whole_number<int>(0))
      ->capture_default_str();
  check
      ->add_option(
          "--links", f->links,
          "btl_tcp_links: TCP connections per pair of ranks, 1..4 (Open MPI 4.1 hangs above "
          "4: docs/SUITES.md, known problems)")
      ->check(whole_number<int>(1, 4))
      ->capture_default_str();
  check->add_option("--timeout", f->timeout_s, "Seconds each job may take before it is killed")
      ->check(kPositive)
      ->capture_default_str();
  check->callback([f] { run_check(*f); });
  add_probe(cluster);
}

}  // namespace trainscope::cli
