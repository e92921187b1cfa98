// The hosts a suite case runs on, and the link measured between them, for
// the suite runner (suites/runner.h).
//
// A case with hosts = 1 runs where the runner was told (this machine, or
// its --hostfile as before). A case with hosts > 1 runs on:
//  - the runner's --hostfile: real machines, whose link is the network's
//    own, so a case asking for a link profile other than unlimited is
//    skipped, as is one needing more hosts than the hostfile lists;
//  - the virtual cluster named by --cluster PREFIX (one `netns-cluster.sh
//    up` made; left as it is): cases whose hosts, cores per host or link
//    differ from it are skipped, with its figures in the reason;
//  - otherwise a virtual cluster made here (prefix tsrun-PID) with the
//    case's hosts, cores per host and link. Consecutive cases that agree on
//    those three share it; a case that differs replaces it; the destructor
//    takes the last one down, also when the suite is interrupted or throws.
//    Where namespaces cannot be made (not root, a container) the case is
//    skipped with the reason, never failed.
// The link is measured once per cluster, transport and link count: a 2-rank
// allreduce-bench between the first two hosts (64 KiB to 16 MiB), fitted
// with analysis::fit_link, because the shaper's target and what this machine
// delivers differ. A probe that fails leaves the figures empty and says why
// on the progress stream; the case still runs.
//
// Clusters of runners that were killed (SIGKILL runs no destructor) are
// removed before a new one is made.
//
// Thread-safety: one thread; it starts children and owns a cluster.
#ifndef TRAINSCOPE_SUITES_CASE_HOSTS_H_
#define TRAINSCOPE_SUITES_CASE_HOSTS_H_

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "suites/launch_plan.h"
#include "suites/suite_config.h"
#include "suites/virtual_cluster.h"

namespace trainscope::suites {

// Where one case runs.
struct CaseHosts {
  PlanContext ctx;                        // hostfile, mpirun, interface and slots of its hosts
  std::string skip_reason;                // non-empty: it cannot run here
  std::string link;                       // the link it ran behind, as recorded ("" unshaped)
  std::optional<double> link_gbps;        // measured, Gbit/s one way
  std::optional<double> link_latency_us;  // measured, per ring step
};

class CaseHostProvider {
 public:
  // `base`: the runner's context (its hostfile, if any). `cluster_prefix`:
  // --cluster, "" to make clusters here. `work_dir`: for trimmed hostfiles
  // and the probes' rows (shared with the first host, as the runner's is).
  // Throws Error when --cluster names a cluster that does not exist, or is
  // given with a hostfile.
  CaseHostProvider(const PlanContext& base, const std::string& cluster_prefix,
                   const std::filesystem::path& work_dir, std::FILE* progress);
  ~CaseHostProvider();
  CaseHostProvider(const CaseHostProvider&) = delete;
  CaseHostProvider& operator=(const CaseHostProvider&) = delete;

  // The context for `c`, bringing up (or replacing) a cluster and measuring
  // its link when needed. Error when a cluster cannot be brought up although
  // namespaces can be made (a bad rate, a script failure).
  CaseHosts prepare(const Suite& suite, const SuiteCase& c);
  // The same without starting anything (a dry run): a cluster it would make
  // is described by the paths it will have.
  CaseHosts plan_only(const SuiteCase& c);

 private:
  CaseHosts place(const SuiteCase& c);
  void ensure_cluster(const SuiteCase& c);
  void measure_link(const Suite& suite, const SuiteCase& c, CaseHosts& where);

  PlanContext base_;
  std::filesystem::path work_dir_;
  std::FILE* progress_;
  std::string own_prefix_;                 // tsrun-PID
  std::optional<VirtualCluster> cluster_;  // attached (--cluster) or made here
  bool attached_ = false;
  std::string cluster_key_;                 // hosts/cores/link of cluster_
  std::optional<std::string> unavailable_;  // why clusters cannot be made here
  struct Measured {
    std::optional<double> gbps, latency_us;
  };
  std::map<std::string, Measured> links_;  // by cluster, transport and links
  std::vector<HostEntry> hostfile_hosts_;  // of base_.hostfile, read once
};

}  // namespace trainscope::suites

#endif  // TRAINSCOPE_SUITES_CASE_HOSTS_H_
