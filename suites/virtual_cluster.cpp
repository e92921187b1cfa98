#include "suites/virtual_cluster.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/check.h"
#include "base/json_reader.h"
#include "profiler/supervise.h"

namespace trainscope::suites {
namespace {

namespace fs = std::filesystem;

// Where netns-cluster.sh records a cluster, and where `ip netns` names
// namespaces (both as the script and iproute2 have them).
const fs::path kStateRoot = "/run/trainscope-netns";
const fs::path kNetnsDir = "/run/netns";

// Generous: `up` runs about ten ip/tc commands per host.
constexpr double kScriptTimeoutSeconds = 300;

fs::path config_path(const std::string& prefix) { return kStateRoot / prefix / "cluster.json"; }

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Runs netns-cluster.sh with `args`; Error with its message unless it
// succeeds: exit code 2 (bad input, or this machine cannot) stays 2, any
// other failure is 1.
void run_cluster_script(const std::vector<std::string>& args) {
  SpawnOptions options;
  options.argv = {(netns_scripts_dir() / "netns-cluster.sh").string()};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.own_process_group = true;
  const profiler::CompletedRun run = profiler::run_to_completion(options, kScriptTimeoutSeconds);
  if (run.exit_code == 0) return;
  std::string command = "netns-cluster.sh";
  for (const auto& a : args) command += " " + a;
  if (run.timed_out) {
    throw Error(
        fmt::format("{}: did not finish within {:g} s (killed)", command, kScriptTimeoutSeconds),
        kExitFailure);
  }
  throw Error(fmt::format("{} failed (exit code {}): {}", command, run.exit_code, trimmed(run.err)),
              run.exit_code == kExitBadInput ? kExitBadInput : kExitFailure);
}

// Whether namespace `name` is PREFIX-br or PREFIX-hN.
bool is_namespace_of(const std::string& prefix, const std::string& name) {
  if (!name.starts_with(prefix + "-")) return false;
  const std::string rest = name.substr(prefix.size() + 1);
  return rest == "br" || (rest.size() > 1 && rest[0] == 'h' &&
                          rest.find_first_not_of("0123456789", 1) == std::string::npos);
}

VirtualClusterConfig read_config(const std::string& prefix) {
  const fs::path path = config_path(prefix);
  return parse_virtual_cluster_config(read_file(path), path.string());
}

// Why `program` cannot be run, or "".
std::string missing_program(const std::string& program, const std::string& package) {
  try {
    find_program(program);
    return "";
  } catch (const Error& e) {
    return fmt::format("needs `{}` ({}): {}", program, package, e.what());
  }
}

}  // namespace

VirtualClusterConfig parse_virtual_cluster_config(std::string_view text,
                                                  const std::string& source_name) {
  const nlohmann::json doc = parse_json(text, source_name);
  return JsonReader::rethrow_in(source_name, [&] {
    const JsonReader r(doc);
    VirtualClusterConfig c;
    c.prefix = r["prefix"].get<std::string>();
    c.interface = r["interface"].get<std::string>();
    c.cores_per_host = r["cores_per_host"].get<int>();
    // Absent in clusters made before shares existed: no quota.
    if (r.contains("cpu_share")) c.cpu_share = r["cpu_share"].get<double>();
    c.link = r["link"].get<std::string>();
    c.rate = r["rate"].get<std::string>();
    c.rate_bits_per_second = r["rate_bits_per_second"].get<int64_t>();
    c.hostfile = r["hostfile"].get<std::string>();
    const JsonReader hosts = r["hosts"];
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      const JsonReader h = hosts[i];
      c.hosts.push_back({h["name"].get<std::string>(), h["address"].get<std::string>(),
                         h["cpus"].get<std::string>()});
    }
    if (c.hosts.empty()) hosts.fail("lists no hosts");
    return c;
  });
}

fs::path netns_scripts_dir() {
  if (const char* dir = std::getenv("TRAINSCOPE_SCRIPTS_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return TRAINSCOPE_SCRIPTS_SOURCE_DIR;
}

std::string virtual_cluster_unavailable_reason() {
  if (::geteuid() != 0) {
    return "needs root: network namespaces need CAP_NET_ADMIN and CAP_SYS_ADMIN";
  }
  const fs::path script = netns_scripts_dir() / "netns-cluster.sh";
  if (::access(script.c_str(), X_OK) != 0) {
    return fmt::format("no executable {} (set TRAINSCOPE_SCRIPTS_DIR)", script.string());
  }
  for (const auto& [program, package] : {std::pair{"ip", "iproute2"},
                                         {"tc", "iproute2"},
                                         {"unshare", "util-linux"},
                                         {"taskset", "util-linux"}}) {
    if (std::string why = missing_program(program, package); !why.empty()) return why;
  }
  // A container without CAP_NET_ADMIN has all of the above and still cannot.
  const std::string probe = fmt::format("tsprobe{}", ::getpid());
  SpawnOptions add;
  add.argv = {"ip", "netns", "add", probe};
  const profiler::CompletedRun added = profiler::run_to_completion(add, 30);
  if (added.exit_code != 0) {
    return fmt::format("`ip netns add` is not permitted here: {}", trimmed(added.err));
  }
  SpawnOptions remove;
  remove.argv = {"ip", "netns", "delete", probe};
  profiler::run_to_completion(remove, 30);
  return "";
}

std::string cpu_quota_unavailable_reason() {
  static const std::string reason = [] {
    if (::geteuid() != 0) return std::string("needs root: a CPU quota is a cgroup");
    const fs::path wrapper = netns_scripts_dir() / "cpu-share-run.sh";
    if (::access(wrapper.c_str(), X_OK) != 0) {
      return fmt::format("no executable {} (set TRAINSCOPE_SCRIPTS_DIR)", wrapper.string());
    }
    SpawnOptions probe;
    probe.argv = {wrapper.string(), "0.5", "--", "true"};
    const profiler::CompletedRun run = profiler::run_to_completion(probe, 30);
    if (run.exit_code != 0) return fmt::format("no CPU quota here: {}", trimmed(run.err));
    return std::string();
  }();
  return reason;
}

VirtualCluster::VirtualCluster(VirtualClusterConfig config, bool owned)
    : config_(std::move(config)), owned_(owned) {}

VirtualCluster::VirtualCluster(VirtualCluster&& other) noexcept
    : config_(std::move(other.config_)), owned_(std::exchange(other.owned_, false)) {}

VirtualCluster::~VirtualCluster() {
  if (!owned_) return;
  try {
    down();
  } catch (const Error& e) {
    std::fprintf(stderr, "trainscope: warning: virtual cluster '%s' not removed: %s\n",
                 config_.prefix.c_str(), e.what());
  }
}

bool VirtualCluster::exists(const std::string& prefix) {
  std::error_code ec;
  if (fs::exists(config_path(prefix), ec)) return true;
  for (const auto& entry : fs::directory_iterator(kNetnsDir, ec)) {
    if (is_namespace_of(prefix, entry.path().filename().string())) return true;
  }
  return false;
}

VirtualCluster VirtualCluster::up(const VirtualClusterSpec& spec) {
  if (exists(spec.prefix)) {
    throw Error(
        fmt::format("a virtual cluster with prefix '{}' exists already: reuse it (attach) or "
                    "remove it (scripts/netns-cluster.sh down --prefix {})",
                    spec.prefix, spec.prefix));
  }
  std::vector<std::string> args = {"up", std::to_string(spec.hosts), "--prefix", spec.prefix};
  if (spec.cores_per_host > 0) {
    args.insert(args.end(), {"--cores-per-host", std::to_string(spec.cores_per_host)});
  }
  if (spec.cpu_share < 1) {
    args.insert(args.end(), {"--cpu-share", fmt::format("{:.3f}", spec.cpu_share)});
  }
  if (!spec.link.empty()) args.insert(args.end(), {"--link", spec.link});
  if (!spec.rate.empty()) args.insert(args.end(), {"--rate", spec.rate});
  if (spec.time_scale > 1) {
    args.insert(args.end(), {"--time-scale", fmt::format("{:g}", spec.time_scale)});
  }
  // From here on the cluster is ours: whatever fails, nothing of it stays.
  VirtualClusterConfig pending;
  pending.prefix = spec.prefix;
  VirtualCluster cluster(std::move(pending), /*owned=*/true);
  run_cluster_script(args);
  cluster.config_ = read_config(spec.prefix);
  return cluster;
}

VirtualCluster VirtualCluster::attach(const std::string& prefix) {
  if (!fs::exists(config_path(prefix))) {
    throw Error(
        fmt::format("no virtual cluster with prefix '{}' ({} does not exist): bring one up "
                    "with scripts/netns-cluster.sh up N --prefix {}",
                    prefix, config_path(prefix).string(), prefix));
  }
  VirtualClusterConfig config = read_config(prefix);
  for (const VirtualHost& h : config.hosts) {
    if (!fs::exists(kNetnsDir / h.name)) {
      throw Error(
          fmt::format("{}: host {} has no network namespace (removed by hand?): "
                      "scripts/netns-cluster.sh down --prefix {}, then up again",
                      config_path(prefix).string(), h.name, prefix));
    }
  }
  return VirtualCluster(std::move(config), /*owned=*/false);
}

void VirtualCluster::down() {
  run_cluster_script({"down", "--prefix", config_.prefix});
  owned_ = false;
}

std::string VirtualCluster::mpirun() const {
  return (netns_scripts_dir() / "netns-mpirun.sh").string();
}

std::vector<std::string> VirtualCluster::host_cpus() const {
  std::vector<std::string> cpus;
  for (const VirtualHost& h : config_.hosts) cpus.push_back(h.cpus);
  return cpus;
}

}  // namespace trainscope::suites
