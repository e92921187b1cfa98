// `trainscope cluster check`: is a hostfile a cluster trainscope can run on?
// The walkthrough's `mpirun --hostfile hostfile hostname`, made useful: one
// rank per host runs `trainscope cluster probe`, which reports its host name,
// trainscope version and git revision and the TCP interface there; then a
// 2-rank all-reduce between every pair of hosts measures the link, in
// nccl-tests' columns (cli/cluster_command.cpp runs the jobs).
//
// This file holds what does not launch anything: the probe's report (one
// JSON line per rank on stdout, so that mpirun forwards it from every host),
// the verdict on each host and the two tables.
//
// Thread-safety: plain values and pure functions (probe_this_host reads this
// host's name and interfaces).
#ifndef TRAINSCOPE_SUITES_CLUSTER_CHECK_H_
#define TRAINSCOPE_SUITES_CLUSTER_CHECK_H_

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "results/fields.h"
#include "results/records.h"

namespace trainscope::suites {

// What `trainscope cluster probe` says about the host it runs on.
struct HostReport {
  int rank = -1;          // OMPI_COMM_WORLD_RANK: which hostfile host it is
  std::string hostname;   // gethostname()
  std::string version;    // of the trainscope binary there
  std::string revision;   // its git revision
  std::string interface;  // the interface asked about
  bool interface_found = false;
  std::string address;  // the interface's IPv4 address, "" when it has none
};

// The report of the host this runs on.
HostReport probe_this_host(int rank, const std::string& interface, const std::string& version,
                           const std::string& revision);

// The reports in a job's stdout, by rank: every line that is a JSON object
// with a "hostname" (mpirun's own chatter is other lines).
std::map<int, HostReport> parse_host_reports(const std::string& job_stdout);

// One host of the hostfile and what became of it.
struct HostCheck {
  std::string host;                  // as the hostfile names it
  std::optional<HostReport> report;  // none: it did not report
  bool reached_alone = false;        // reported only from a job of its own
  std::string problem;               // why it fails the check, "" when it passes
};

// Sets `problem` of every host that reported: the interface missing or
// without an address, a version or revision other than `version` and
// `revision` (this machine's), a host name another host reported too (one
// machine listed twice). Hosts without a report keep the problem the caller
// gave them.
void judge_hosts(std::vector<HostCheck>& hosts, const std::string& version,
                 const std::string& revision);

// The all-reduce between two hosts.
struct PairCheck {
  std::string host_a, host_b;
  std::optional<results::AllReduceRow> row;  // none: not measured
  std::string problem;                       // why not, or #wrong; "" when fine
};

// The all-reduce row rank 0 of a pair's probe printed in the job's stdout
// (a JSON object with "busbw_gbps"); none when it printed none.
std::optional<results::AllReduceRow> parse_pair_row(const std::string& job_stdout);

// The tables, '#' lines for headers as nccl-tests prints them.
std::string format_host_table(const std::vector<HostCheck>& hosts);
std::string format_pair_table(const std::vector<PairCheck>& pairs);

}  // namespace trainscope::suites

namespace trainscope::results {
template <>
struct Fields<suites::HostReport> {
  static constexpr auto table = std::tuple{
      field("rank", &suites::HostReport::rank),
      field("hostname", &suites::HostReport::hostname),
      field("version", &suites::HostReport::version),
      field("revision", &suites::HostReport::revision),
      field("interface", &suites::HostReport::interface),
      field("interface_found", &suites::HostReport::interface_found),
      field("address", &suites::HostReport::address),
  };
};
}  // namespace trainscope::results

#endif  // TRAINSCOPE_SUITES_CLUSTER_CHECK_H_
