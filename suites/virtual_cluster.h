// Virtual clusters for the suite runner and the tests: a cluster of network
// namespaces on this machine, made, reused and removed through
// scripts/netns-cluster.sh, whose hosts can own their cores and sit behind a
// link of a given rate (docs/SUITES.md, "A virtual cluster on one machine").
//
// The script is the one place that knows how a cluster is built; this is its
// C++ face. up() runs `netns-cluster.sh up` and reads back what the script
// recorded (/run/trainscope-netns/PREFIX/cluster.json): the hosts, their
// addresses and CPU lists, the link, and the hostfile the script wrote. A
// runner passes hostfile(), mpirun() and tcp_interface() on to mpirun
// (RunnerOptions::hostfile, mpirun, tcp_interface).
//
// A VirtualCluster that up() made is taken down by its destructor, on every
// path (an exception unwinding past it included). One that attach() found is
// someone else's and is left as it was. A process that is killed runs no
// destructor: its cluster stays until `netns-cluster.sh down --prefix P`.
//
// Errors are trainscope::Error with the script's own message: exit code 2
// for bad input (an unknown link profile, a rate tc rejects, more cores than
// this process may use), 1 when a step failed. A cluster that cannot be made
// here at all (not root, a container without CAP_NET_ADMIN) is told apart
// beforehand by virtual_cluster_unavailable_reason(), so that suites and
// tests skip what needs one instead of failing.
//
// Thread-safety: a VirtualCluster belongs to one thread. Clusters with
// different prefixes are independent; two objects must not manage one
// prefix.
#ifndef TRAINSCOPE_SUITES_VIRTUAL_CLUSTER_H_
#define TRAINSCOPE_SUITES_VIRTUAL_CLUSTER_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace trainscope::suites {

// One host of a virtual cluster.
struct VirtualHost {
  std::string name;     // PREFIX-hI: its namespace, host name and hostfile entry
  std::string address;  // IPv4 address of its eth0
  std::string cpus;     // CPU list it is pinned to ("2-3"); "" when not pinned
};

// A cluster's configuration as netns-cluster.sh recorded it in cluster.json.
struct VirtualClusterConfig {
  std::string prefix;
  std::string interface = "eth0";    // the interface the hosts share
  int cores_per_host = 0;            // 0: not pinned, every host shares all cores
  double cpu_share = 1;              // of its cores' time each host may use (a cgroup quota)
  std::string link = "unlimited";    // profile name, or "custom" for a --rate
  std::string rate;                  // tc syntax ("1gbit"); "" when unlimited
  int64_t rate_bits_per_second = 0;  // one direction of each host's link; 0: unlimited
  std::filesystem::path hostfile;    // `PREFIX-hI slots=S` per host
  std::vector<VirtualHost> hosts;
};

// Parses a cluster.json; Error naming `source_name` and the field.
VirtualClusterConfig parse_virtual_cluster_config(std::string_view text,
                                                  const std::string& source_name);

// What to bring up.
struct VirtualClusterSpec {
  std::string prefix = "ts";
  int hosts = 2;
  int cores_per_host = 0;  // > 0: pin host I to the I-th group of this many cores
  // < 1: each host gets this share of its cores (a cgroup CPU quota), and
  // floor(1 / cpu_share) hosts share a group of cores (pinned to 1 core each
  // when cores_per_host is 0): time dilation (docs/CLUSTERS.md).
  double cpu_share = 1;
  std::string link;  // a profile: gige, 2.5gbe, 10gbe, tb-bridge, unlimited
  std::string rate;  // or a rate in tc's syntax ("500mbit"); neither: unlimited
  // > 1: the link that many times slower with the same token bucket in bytes
  // (a slowed replay: netns-cluster.sh --time-scale).
  double time_scale = 1;
};

// Where netns-cluster.sh, netns-mpirun.sh and netns-rsh-agent.sh are:
// $TRAINSCOPE_SCRIPTS_DIR if set, else the scripts/ folder of the source
// tree this binary was built from.
std::filesystem::path netns_scripts_dir();

// "" when this process can make virtual clusters; otherwise why it cannot
// ("needs root ...", "`ip netns add` is not permitted here: ..."), for a
// SKIP. Probes by adding and deleting a namespace.
std::string virtual_cluster_unavailable_reason();

// "" when this process can hold a job to a CPU quota (a case's cpu_share,
// on one host or a cluster's); otherwise why not: root, the wrapper
// (cpu-share-run.sh), a cgroup cpu controller it may write (a container can
// have root and none). Probes once by running `true` under a quota.
std::string cpu_quota_unavailable_reason();

class VirtualCluster {
 public:
  // Brings up a new cluster and reads its configuration. Error when a
  // cluster with spec.prefix exists already (attach() reuses one), with the
  // script's message when it fails; nothing of the new cluster is left then.
  static VirtualCluster up(const VirtualClusterSpec& spec);
  // A cluster that exists, from its recorded configuration. Error when there
  // is none, or a host it records has no namespace. Not taken down here.
  static VirtualCluster attach(const std::string& prefix);
  // Whether anything of a cluster with this prefix exists (its bridge
  // namespace or its recorded configuration).
  static bool exists(const std::string& prefix);

  VirtualCluster(VirtualCluster&& other) noexcept;
  VirtualCluster& operator=(VirtualCluster&&) = delete;
  VirtualCluster(const VirtualCluster&) = delete;
  VirtualCluster& operator=(const VirtualCluster&) = delete;
  // down() if up() made it; a failure is printed to stderr, not thrown.
  ~VirtualCluster();

  // Removes the cluster (namespaces, processes left in them, qdiscs, state);
  // idempotent. Error with the script's message when something remained.
  // Also for an attached cluster, when the caller means to remove it.
  void down();

  const VirtualClusterConfig& config() const { return config_; }
  const std::string& prefix() const { return config_.prefix; }
  const std::filesystem::path& hostfile() const { return config_.hostfile; }
  // The mpirun to give a runner: scripts/netns-mpirun.sh.
  std::string mpirun() const;
  const std::string& tcp_interface() const { return config_.interface; }
  // Host I's CPU list, in host order ("" for hosts that are not pinned).
  std::vector<std::string> host_cpus() const;

 private:
  VirtualCluster(VirtualClusterConfig config, bool owned);

  VirtualClusterConfig config_;
  bool owned_ = false;  // made by up(): taken down by the destructor
};

}  // namespace trainscope::suites

#endif  // TRAINSCOPE_SUITES_VIRTUAL_CLUSTER_H_
