#include "suites/case_hosts.h"

#include <unistd.h>

#include <regex>

#include <fmt/format.h>

#include "base/check.h"
#include "profiler/proc_fs.h"
#include "profiler/supervise.h"
#include "analysis/prediction.h"
#include "results/link_profiles.h"
#include "results/records.h"

namespace trainscope::suites {
namespace {

namespace fs = std::filesystem;

// A case's link as a cluster records it: a profile name, "unlimited" for
// none, "custom" for a tc rate.
std::string cluster_link(const std::string& link) {
  if (link.empty()) return "unlimited";
  return results::find_link_profile(link) ? link : "custom";
}

std::string cluster_key(int hosts, int cores_per_host, const std::string& link, double share,
                        double time_scale = 1) {
  return fmt::format("{} hosts x {} cores{}, link {}{}{}", hosts, cores_per_host,
                     share < 1 ? fmt::format(" at a CPU share of {:g}", share) : "",
                     link.empty() ? "unlimited" : link,
                     share < 1 ? fmt::format(" x {:g}", share) : "",
                     time_scale > 1 ? fmt::format(" / {:g}", time_scale) : "");
}
std::string cluster_key(const SuiteCase& c) {
  return cluster_key(c.hosts, c.cores_per_host, c.link, c.cpu_share, c.train.replay_time_scale);
}

// The rate a dilated case's cluster is shaped to: its link's x the share
// (std::nullopt when unlimited, which stays unlimited). A slowed replay's
// cluster runs at that / replay_time_scale, which netns-cluster.sh divides.
std::optional<double> dilated_bits(const SuiteCase& c) {
  const double bits =
      results::link_bits_per_second(c.link.empty() ? "unlimited" : c.link).value_or(0);
  if (!(bits > 0)) return std::nullopt;
  return std::round(bits * c.cpu_share);
}

// The first `count` of a hostfile's hosts: the file itself when it has no
// more, else a hostfile of those written into `dir`.
fs::path first_hosts(const fs::path& hostfile, const std::vector<HostEntry>& all, int count,
                     const fs::path& dir, int* slots) {
  const std::vector<HostEntry> hosts(all.begin(),
                                     all.begin() + std::min<std::size_t>(count, all.size()));
  *slots = 0;
  for (const auto& h : hosts) *slots += h.slots;
  if (hosts.size() == all.size()) return hostfile;
  const fs::path trimmed = dir / fmt::format("hosts-{}-of-{}", count, hostfile.filename().string());
  write_hostfile(trimmed, hosts);
  return trimmed;
}

// Clusters of runners that were killed (no destructor ran): tsrun-PID
// state recorded for a process that is gone, or for this pid reused.
void remove_clusters_of_dead_runners() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/run/trainscope-netns", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("tsrun-", 0) != 0) continue;
    const std::string digits = name.substr(6);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid != getpid() && profiler::process_alive(pid)) continue;
    try {
      VirtualCluster::attach(name).down();
    } catch (const Error&) {
      // Half a cluster: the script's down removes whatever is left of it.
      SpawnOptions down;
      down.argv = {(netns_scripts_dir() / "netns-cluster.sh").string(), "down", "--prefix", name};
      profiler::run_to_completion(down, 60);
    }
  }
}

}  // namespace

CaseHostProvider::CaseHostProvider(const PlanContext& base, const std::string& cluster_prefix,
                                   const fs::path& work_dir, std::FILE* progress)
    : base_(base),
      work_dir_(work_dir),
      progress_(progress),
      own_prefix_(fmt::format("tsrun-{}", getpid())) {
  if (!base_.hostfile.empty()) {
    if (!cluster_prefix.empty()) {
      throw Error("--cluster and --hostfile both name the hosts; give one of them");
    }
    hostfile_hosts_ = load_hostfile(base_.hostfile);
  }
  if (!cluster_prefix.empty()) {
    // netns-cluster.sh's rule for a prefix (it becomes namespace names).
    static const std::regex kPrefix("[a-z0-9][a-z0-9-]{0,39}");
    if (!std::regex_match(cluster_prefix, kPrefix)) {
      throw Error(fmt::format("--cluster '{}': a cluster prefix is 1-40 of a-z, 0-9 and '-'",
                              cluster_prefix));
    }
    cluster_.emplace(VirtualCluster::attach(cluster_prefix));
    attached_ = true;
  }
}

CaseHostProvider::~CaseHostProvider() = default;

// Where `c` would run, without starting anything; a cluster that is to be
// made is described by its prefix.
CaseHosts CaseHostProvider::place(const SuiteCase& c) {
  CaseHosts w;
  w.ctx = base_;
  w.link = c.link;
  // A quota (cpu_share) is this machine's cgroup, alone or a virtual cluster's.
  const std::string no_quota =
      c.cpu_share < 1 && base_.hostfile.empty() ? cpu_quota_unavailable_reason() : "";
  if (!no_quota.empty()) {
    w.skip_reason = fmt::format("needs a CPU quota (cpu_share {:g}): {}", c.cpu_share, no_quota);
    return w;
  }
  if (runs_alone_under_quota(c)) {  // no cluster: a cgroup of its own (launch_plan)
    if (!base_.hostfile.empty()) {  // the rank would run on the hostfile's host, not under it
      w.skip_reason = fmt::format(
          "cpu_share {:g} on one host is a quota on this machine; with --hostfile the rank "
          "runs on {}",
          c.cpu_share, base_.hostfile.string());
    }
    return w;
  }
  if (c.hosts <= 1) return w;
  const std::string needs = cluster_key(c);
  if (!base_.hostfile.empty()) {
    w.link = "";
    if (c.hosts > static_cast<int>(hostfile_hosts_.size())) {
      w.skip_reason = fmt::format("needs {} hosts; --hostfile {} lists {}", c.hosts,
                                  base_.hostfile.string(), hostfile_hosts_.size());
    } else if (cluster_link(c.link) != "unlimited") {
      w.skip_reason = fmt::format(
          "link {} shapes virtual hosts only; over --hostfile the link is the network's own",
          c.link);
    }
    return w;
  }
  if (attached_) {
    const VirtualClusterConfig& cfg = cluster_->config();
    const int hosts = static_cast<int>(cfg.hosts.size());
    // By rate: a case's "1gbit" is the cluster's gige, and one tc rate is
    // not another.
    const double bits = dilated_bits(c).value_or(0) / c.train.replay_time_scale;
    if (c.hosts > hosts || c.cores_per_host != cfg.cores_per_host ||
        std::abs(c.cpu_share - cfg.cpu_share) > 1e-3 ||
        std::abs(bits - static_cast<double>(cfg.rate_bits_per_second)) > 1e-3 * bits) {
      w.skip_reason = fmt::format("needs {}; --cluster {} is {}", needs, cfg.prefix,
                                  cluster_key(hosts, cfg.cores_per_host, cfg.link, cfg.cpu_share));
    }
    w.link = cfg.link == "custom" ? cfg.rate : cfg.link;
    return w;
  }
  if (!unavailable_) unavailable_ = virtual_cluster_unavailable_reason();
  if (!unavailable_->empty()) {
    w.skip_reason = fmt::format("needs a virtual cluster ({}): {}", needs, *unavailable_);
  }
  return w;
}

CaseHosts CaseHostProvider::plan_only(const SuiteCase& c) {
  CaseHosts w = place(c);
  if (c.hosts <= 1 || !w.skip_reason.empty() || !base_.hostfile.empty()) return w;
  if (attached_) {
    w.ctx.hostfile = cluster_->hostfile();
    w.ctx.tcp_interface = cluster_->tcp_interface();
  } else {
    w.ctx.hostfile = fs::path("/run/trainscope-netns") / own_prefix_ / "hostfile";
    w.ctx.tcp_interface = "eth0";
  }
  w.ctx.mpirun = (netns_scripts_dir() / "netns-mpirun.sh").string();
  w.ctx.slots = c.hosts * std::max(1, c.cores_per_host);
  return w;
}

CaseHosts CaseHostProvider::prepare(const Suite& suite, const SuiteCase& c) {
  CaseHosts w = place(c);
  if (c.hosts <= 1 || !w.skip_reason.empty()) return w;
  fs::path hostfile = base_.hostfile;
  if (base_.hostfile.empty()) {
    if (!attached_) ensure_cluster(c);
    hostfile = cluster_->hostfile();
    w.ctx.mpirun = cluster_->mpirun();
    w.ctx.tcp_interface = cluster_->tcp_interface();
  }
  w.ctx.hostfile =
      first_hosts(hostfile, base_.hostfile.empty() ? load_hostfile(hostfile) : hostfile_hosts_,
                  c.hosts, work_dir_, &w.ctx.slots);
  measure_link(suite, c, w);
  return w;
}

void CaseHostProvider::ensure_cluster(const SuiteCase& c) {
  const std::string key = cluster_key(c);
  if (cluster_ && key == cluster_key_) return;
  cluster_.reset();  // takes the previous one down
  cluster_key_.clear();
  remove_clusters_of_dead_runners();
  VirtualClusterSpec spec;
  spec.prefix = own_prefix_;
  spec.hosts = c.hosts;
  spec.cores_per_host = c.cores_per_host;
  spec.cpu_share = c.cpu_share;
  spec.time_scale = c.train.replay_time_scale;  // the script divides the rate
  if (c.cpu_share < 1 && dilated_bits(c)) {
    spec.rate = fmt::format("{:.0f}bit", *dilated_bits(c));  // time dilation: F x the rate
  } else {
    (results::find_link_profile(c.link) || c.link.empty() ? spec.link : spec.rate) = c.link;
  }
  std::fprintf(progress_, "  bringing up a virtual cluster: %s (prefix %s)\n", key.c_str(),
               own_prefix_.c_str());
  std::fflush(progress_);
  cluster_.emplace(VirtualCluster::up(spec));
  cluster_key_ = key;
}

// A 2-rank all-reduce sweep between the first two hosts of w.ctx, on the
// case's transport and link count, fitted as the prediction fits links.
void CaseHostProvider::measure_link(const Suite& suite, const SuiteCase& c, CaseHosts& w) {
  const std::string key = fmt::format("{} | {} | {} | {}", w.ctx.hostfile.string(), cluster_key_,
                                      enum_name(c.transport), c.links);
  if (auto it = links_.find(key); it != links_.end()) {
    w.link_gbps = it->second.gbps;
    w.link_latency_us = it->second.latency_us;
    return;
  }
  SuiteCase probe;
  probe.name = "link-probe";
  probe.kind = CaseKind::kAllReduce;
  probe.ranks = 2;
  probe.hosts = 2;
  probe.cores_per_host = c.cores_per_host;
  probe.cpu_share = c.cpu_share;
  probe.transport =
      c.transport == options::Transport::kAuto ? options::Transport::kTcp : c.transport;
  probe.links = c.links;
  probe.tcp_interface = c.tcp_interface;
  probe.sweep.min_bytes = 64 << 10;
  probe.sweep.max_bytes = 16 << 20;
  probe.sweep.factor = 4;
  probe.sweep.iters = 5;
  probe.sweep.warmup = 2;
  const fs::path rows_file = work_dir_ / fmt::format("link-probe-{}.jsonl", links_.size());
  const LaunchPlan plan = plan_case(suite, probe, w.ctx, rows_file);
  Measured& m = links_[key];
  std::string problem;
  try {
    SpawnOptions job;
    job.argv = plan.argv;
    job.env = plan.env;
    const profiler::CompletedRun run = profiler::run_to_completion(job, 120);
    if (run.timed_out || run.exit_code != 0) {
      problem =
          run.timed_out ? "timed out after 120 s" : fmt::format("exit code {}", run.exit_code);
      if (!run.err.empty()) problem += ": " + run.err.substr(0, 400);
    } else {
      const std::vector<results::AllReduceRow> rows = results::load_allreduce_rows(rows_file);
      if (const auto link = analysis::fit_link(rows, w.link)) {
        m.gbps = link->bandwidth_Bps * 8 / 1e9;
        m.latency_us = link->latency_s * 1e6;
      } else {
        problem = "the sweep's times do not fit latency + bytes / bandwidth";
      }
    }
  } catch (const Error& e) {
    problem = e.what();
  }
  if (m.gbps) {
    std::fprintf(progress_, "  link measured: %.2f Gbit/s, %.0f us per step (%s)\n", *m.gbps,
                 *m.latency_us, key.c_str());
  } else {
    std::fprintf(progress_, "  link not measured (%s): %s\n", key.c_str(), problem.c_str());
  }
  std::fflush(progress_);
  w.link_gbps = m.gbps;
  w.link_latency_us = m.latency_us;
}

}  // namespace trainscope::suites
