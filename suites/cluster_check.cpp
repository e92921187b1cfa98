#include "suites/cluster_check.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "profiler/proc_fs.h"
#include "suites/allreduce_bench.h"

namespace trainscope::suites {
namespace {

constexpr const char* kNone = "-";

// The width of a host column: its longest entry, at least the header's.
std::size_t host_width(const std::vector<std::string>& names, std::size_t at_least) {
  std::size_t w = at_least;
  for (const auto& n : names) w = std::max(w, n.size());
  return w;
}

// The lines of a job's stdout that are JSON objects with member `key`: what
// the probes print. Other lines (mpirun's own) are not theirs.
std::vector<nlohmann::json> json_lines_with(const std::string& job_stdout, const char* key) {
  std::vector<nlohmann::json> found;
  std::istringstream in(job_stdout);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains(key)) found.push_back(std::move(j));
  }
  return found;
}

}  // namespace

HostReport probe_this_host(int rank, const std::string& interface, const std::string& version,
                           const std::string& revision) {
  HostReport r;
  r.rank = rank;
  r.version = version;
  r.revision = revision;
  r.interface = interface;
  r.hostname = profiler::host_name();
  ifaddrs* addrs = nullptr;
  if (::getifaddrs(&addrs) != 0) return r;
  for (ifaddrs* a = addrs; a != nullptr; a = a->ifa_next) {
    if (a->ifa_name == nullptr || interface != a->ifa_name) continue;
    r.interface_found = true;
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET || !r.address.empty()) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text)) != nullptr) r.address = text;
  }
  ::freeifaddrs(addrs);
  return r;
}

std::map<int, HostReport> parse_host_reports(const std::string& job_stdout) {
  std::map<int, HostReport> reports;
  for (const nlohmann::json& j : json_lines_with(job_stdout, "hostname")) {
    HostReport r;
    results::from_json(j, r);
    reports[r.rank] = r;
  }
  return reports;
}

std::optional<results::AllReduceRow> parse_pair_row(const std::string& job_stdout) {
  const std::vector<nlohmann::json> rows = json_lines_with(job_stdout, "busbw_gbps");
  if (rows.empty()) return std::nullopt;
  results::AllReduceRow row;
  results::from_json(rows.front(), row);
  return row;
}

void judge_hosts(std::vector<HostCheck>& hosts, const std::string& version,
                 const std::string& revision) {
  std::map<std::string, std::string> host_of_name;  // reported host name -> first host
  for (HostCheck& h : hosts) {
    if (!h.report) continue;
    const HostReport& r = *h.report;
    std::vector<std::string> problems;
    if (!h.problem.empty()) problems.push_back(h.problem);
    if (!r.interface_found) {
      problems.push_back(fmt::format("no interface {}", r.interface));
    } else if (r.address.empty()) {
      problems.push_back(fmt::format("{} has no IPv4 address", r.interface));
    }
    if (r.version != version) {
      problems.push_back(fmt::format("version {} (here {})", r.version, version));
    }
    if (r.revision != revision) {
      problems.push_back(fmt::format("revision {} (here {})", r.revision, revision));
    }
    const auto [first, added] = host_of_name.try_emplace(r.hostname, h.host);
    if (!added) {
      problems.push_back(
          fmt::format("the same machine as {} (both are {})", first->second, r.hostname));
    }
    h.problem = fmt::format("{}", fmt::join(problems, "; "));
  }
}

std::string format_host_table(const std::vector<HostCheck>& hosts) {
  std::vector<std::string> names;
  for (const HostCheck& h : hosts) {
    names.push_back(h.host);
    if (h.report) names.push_back(h.report->hostname);
  }
  const std::size_t w = host_width(names, 8);
  const std::string row =
      fmt::format(" {{:>{0}}} {{:>{0}}} {{:>8}} {{:>12}} {{:>9}} {{:>15}}  {{}}\n", w);
  std::string s = "#" + fmt::format(fmt::runtime(row.substr(1)), "host", "hostname", "version",
                                    "revision", "interface", "address", "status");
  for (const HostCheck& h : hosts) {
    std::string status = h.problem.empty() ? "ok" : "FAILED: " + h.problem;
    if (h.reached_alone) status += " (reached alone, not by the job over all hosts)";
    if (!h.report) {
      s += fmt::format(fmt::runtime(row), h.host, kNone, kNone, kNone, kNone, kNone, status);
      continue;
    }
    const HostReport& r = *h.report;
    s += fmt::format(fmt::runtime(row), h.host, r.hostname, r.version, r.revision,
                     r.interface_found ? r.interface : "missing",
                     r.address.empty() ? kNone : r.address, status);
  }
  return s;
}

std::string format_pair_table(const std::vector<PairCheck>& pairs) {
  std::vector<std::string> names;
  for (const PairCheck& p : pairs) names.insert(names.end(), {p.host_a, p.host_b});
  const std::size_t w = host_width(names, 7);
  std::string s = format_sweep_columns(fmt::format("#{:>{}} {:>{}} ", "host A", w, "host B", w),
                                       fmt::format("#{:>{}} {:>{}} ", "", w, "", w));
  std::vector<results::AllReduceRow> measured;
  for (const PairCheck& p : pairs) {
    s += fmt::format(" {:>{}} {:>{}}", p.host_a, w, p.host_b, w);
    if (p.row) {
      measured.push_back(*p.row);
      std::string numbers = format_sweep_row(*p.row);
      if (!p.problem.empty()) numbers.insert(numbers.size() - 1, "  FAILED: " + p.problem);
      s += numbers;
    } else {
      s += "  FAILED: " + p.problem + "\n";
    }
  }
  return s + format_sweep_footer(measured);
}

}  // namespace trainscope::suites
