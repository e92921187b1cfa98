#include "suites/launch_plan.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/check.h"
#include "profiler/proc_fs.h"
#include "profiler/supervise.h"
#include "results/allreduce_algorithms.h"
#include "suites/pytorch_peer.h"
#include "suites/virtual_cluster.h"

namespace trainscope::suites {
namespace {

// Whether a hostfile's host is this machine (by name, or an address of one
// of its interfaces): Open MPI starts its ranks without a remote daemon, so
// loopback is enough for it. No name lookup: a dead DNS must not stall us.
bool is_this_host(const std::string& host) {
  if (host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1") return true;
  if (const std::string self = profiler::host_name(); !self.empty()) {
    if (host == self || host == self.substr(0, self.find('.')) ||
        self == host.substr(0, host.find('.'))) {
      return true;
    }
  }
  ifaddrs* addrs = nullptr;
  if (getifaddrs(&addrs) != 0) return false;
  bool local = false;
  for (ifaddrs* a = addrs; a != nullptr && !local; a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    const int family = a->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw =
        family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr);
    local = inet_ntop(family, raw, text, sizeof(text)) != nullptr && host == text;
  }
  freeifaddrs(addrs);
  return local;
}

}  // namespace

// The option table's suite keys in the order a case's command line has
// always given them (so a command reads as it did), then any others; not
// the model and init_from, which plan_case gives first.
const std::vector<const options::TrainOption*>& command_rows() {
  static const std::vector<const options::TrainOption*> rows = [] {
    constexpr std::string_view kOrder[] = {
        "mode",         "reduce",     "bucket_mb", "allreduce",  "zero",         "precision",
        "comm_dtype",   "fine_tune",  "lora_rank", "lora_alpha", "lora_dropout", "lora_layers",
        "lora_targets", "batch",      "block",     "steps",      "warmup_steps", "data",
        "tokenizer",    "eval_every", "shard",     "lr",         "threads"};
    std::vector<const options::TrainOption*> out;
    for (std::string_view key : kOrder) out.push_back(options::find_suite_option(key));
    for (const options::TrainOption& row : options::train_option_table()) {
      if (row.suite.empty() || row.suite == "model" || row.suite == "init_from") continue;
      if (std::find(std::begin(kOrder), std::end(kOrder), row.suite) == std::end(kOrder)) {
        out.push_back(&row);
      }
    }
    return out;
  }();
  return rows;
}

std::string case_interface(const Suite& suite, const SuiteCase& c, const PlanContext& ctx) {
  if (!ctx.tcp_interface.empty()) return ctx.tcp_interface;
  return c.tcp_interface.empty() ? suite.tcp_interface : c.tcp_interface;
}

void check_hosts_reachable(const std::vector<HostEntry>& hosts, const std::string& tcp_if,
                           const std::filesystem::path& hostfile) {
  if (tcp_if != "lo") return;
  for (const auto& h : hosts) {
    if (!is_this_host(h.host)) {
      throw Error(
          fmt::format("{}: host '{}' is not this machine, but Open MPI's TCP traffic is "
                      "pinned to lo, which cannot reach it: give --tcp-interface IFACE"
                      " (the interface the hosts share, e.g. "
                      "eth0) or set tcp_interface in the suite",
                      hostfile.string(), h.host));
    }
  }
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    const bool plain =
        !a.empty() &&
        a.find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+%@") ==
            std::string::npos;
    if (plain) {
      s += a;
    } else {
      s += '\'';
      for (char c : a) s += c == '\'' ? std::string("'\\''") : std::string(1, c);
      s += '\'';
    }
  }
  return s;
}

std::string resolve_executable(const std::string& name, const std::string& flag) {
  try {
    return find_program(name, flag);
  } catch (const Error& e) {
    // A flag naming a program that cannot run is bad input to the suite.
    if (e.exit_code() != 127 || name.find('/') != std::string::npos) throw Error(e.what());
    throw Error(fmt::format("{}; install Open MPI (scripts/install-deps.sh) or give {} /path/to/{}",
                            e.what(), flag, name));
  }
}

bool needs_mpirun(const SuiteCase& c, const PlanContext& ctx) {
  // (An Open MPI algorithm is kept only on more than one rank: resolve().)
  return c.ranks > 1 || c.transport != options::Transport::kAuto || !ctx.hostfile.empty();
}

std::filesystem::path status_dir_for(const std::filesystem::path& output) {
  return output.parent_path() / (output.stem().string() + "-status");
}

std::string case_links(const SuiteCase& c) {
  return c.transport == options::Transport::kTcp ? fmt::format("{}", c.links > 0 ? c.links : 1)
                                                 : std::string(enum_name(c.transport));
}

namespace {

namespace fs = std::filesystem;

// The export: the case's trainscope command as one process of the naive
// run (the same global batches), writing `dir` instead of training.
std::vector<std::string> export_command(std::vector<std::string> argv, const fs::path& dir) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    const bool valued = i + 1 < argv.size();
    if (valued && (a == "--summary" || a == "--status-dir" || a == "--reduce" ||
                   a == "--bucket-mb" || a == "--comm-dtype" || a == "--shard")) {
      ++i;  // the peer's, or the run's own
      continue;
    }
    out.push_back(a);
    if (valued && a == "--mode") {
      out.push_back("naive");
      ++i;
    }
  }
  out.insert(out.end(), {"--export-run", dir.string()});
  return out;
}

// The PyTorch peer (suites/pytorch_peer.h) of a pytorch case: replaces the
// trainscope command of its plan (everything from
// the trainscope binary on) by the peer's, and sets the plan's `prepare`
// command that exports the run first. `output` is the summary the peer writes;
// gloo's sockets go over `tcp_interface`, as Open MPI's TCP traffic would.
void plan_pytorch_peer(const SuiteCase& c, const PlanContext& ctx, const std::string& tcp_interface,
                       const fs::path& output, LaunchPlan& plan) {
  const auto binary = std::find(plan.argv.begin(), plan.argv.end(), ctx.trainscope_binary.string());
  TS_CHECK(binary != plan.argv.end());
  const fs::path dir = output.parent_path() / (output.stem().string() + "-export");
  const fs::path store = output.parent_path() / (output.stem().string() + "-store");
  plan.prepare = export_command({binary, plan.argv.end()}, dir);
  plan.prepare_removes = {dir, store};
  plan.argv.erase(binary, plan.argv.end());
  // Every rank's, on remote hosts too (mpirun -x); gloo would otherwise bind
  // the address of the host's name, which a virtual host may not have.
  const std::string gloo_if = "GLOO_SOCKET_IFNAME=" + tcp_interface;
  if (plan.uses_mpirun) {
    plan.argv.insert(plan.argv.end(), {"-x", gloo_if});
  } else {
    plan.env.push_back(gloo_if);
  }
  const options::TrainOptions& t = c.train;
  const std::string python = pytorch_python().empty() ? "python3" : pytorch_python();
  plan.argv.insert(plan.argv.end(),
                   {python, pytorch_peer_script().string(), "--run", dir.string(), "--mode",
                    c.ranks > 1 ? "sharded" : "naive", "--reduce", std::string(enum_name(t.reduce)),
                    "--bucket-mb", fmt::format("{}", t.bucket_mb), "--comm-dtype",
                    std::string(enum_name(t.comm_dtype)), "--threads", std::to_string(t.threads),
                    "--summary", output.string(), "--quiet"});
  if (c.ranks > 1) plan.argv.insert(plan.argv.end(), {"--rendezvous", store.string()});
}

}  // namespace

LaunchPlan plan_case(const Suite& suite, const SuiteCase& c, const PlanContext& ctx,
                     const std::filesystem::path& output) {
  LaunchPlan plan;
  plan.uses_mpirun = needs_mpirun(c, ctx);
  if (plan.uses_mpirun) {
    plan.argv = {ctx.mpirun, "-np", std::to_string(c.ranks)};
    if (!ctx.hostfile.empty()) {
      plan.argv.push_back("--hostfile");
      plan.argv.push_back(ctx.hostfile.string());
    }
    if (c.ranks > ctx.slots) plan.argv.push_back("--oversubscribe");
    // Ranks spread evenly over the hosts (rank r on host r mod H) rather
    // than filling the first host's slots.
    if (c.hosts > 1) plan.argv.insert(plan.argv.end(), {"--map-by", "node"});
    // Hosts that own their cores pin their processes themselves; Open MPI,
    // which sees the whole machine, would bind ranks to other hosts' cores.
    plan.argv.push_back("--bind-to");
    plan.argv.push_back(c.hosts > 1 && c.cores_per_host > 0 ? "none" : suite.bind_to);
    auto mca = [&](const std::string& key, const std::string& value) {
      plan.argv.insert(plan.argv.end(), {"--mca", key, value});
      plan.transport[key] = value;
    };
    if (c.transport == options::Transport::kTcp) {
      mca("pml", "ob1");
      mca("btl", "tcp,self");
      mca("btl_tcp_links", std::to_string(c.links > 0 ? c.links : 1));
    } else if (c.transport == options::Transport::kShm) {
      mca("pml", "ob1");
      mca("btl", "vader,self");
    }
    // Open MPI's own all-reduce algorithm, forced: its coll_tuned component
    // obeys coll_tuned_allreduce_algorithm only with dynamic rules on.
    if (c.mpi_algorithm > 0) {
      mca("coll_tuned_use_dynamic_rules", "1");
      mca("coll_tuned_allreduce_algorithm", std::to_string(c.mpi_algorithm));
    }
    // Replayed ranks sleep their compute, but a rank waiting in MPI polls: 8
    // replayed hosts polling on 2 cores took the CPU their own TCP traffic
    // needed (an 8-host gige all-reduce of 7 MiB: 1.83 s polling, 0.19 s
    // yielding). A real host polls on its own core, as hosts pinned to cores
    // of their own do; hosts that share the machine's cores yield.
    if (!c.replay_from.empty() && c.hosts > 1 && c.cores_per_host == 0) {
      mca("mpi_yield_when_idle", "1");
    }
    // Pinned even for shm/auto: the TCP components open sockets regardless.
    const std::string tcp_if = case_interface(suite, c, ctx);
    mca("btl_tcp_if_include", tcp_if);
    mca("oob_tcp_if_include", tcp_if);
    plan.argv.insert(plan.argv.end(), ctx.extra_mpirun_args.begin(), ctx.extra_mpirun_args.end());
    if (ctx.as_root) {
      plan.env = {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};
    }
  }
  plan.argv.push_back(ctx.trainscope_binary.string());
  auto flag = [&](const std::string& name, const std::string& value) {
    plan.argv.push_back(name);
    plan.argv.push_back(value);
  };
  // Only when not the default: the command of a default case stays as it was.
  const options::TrainOption& allreduce = *options::find_suite_option("allreduce");
  auto allreduce_flag = [&] {
    if (c.is_set(allreduce)) flag("--allreduce", options::option_text(allreduce, c.train));
  };
  if (c.kind == CaseKind::kTrain) {
    plan.argv.push_back("train");
    // A checkpoint to start from names the model itself.
    if (c.train.init_from.empty()) {
      flag("--model", c.train.model);
    } else {
      flag("--init-from", c.train.init_from);
    }
    // Every setting of the option table a suite may give: always, or when set.
    for (const options::TrainOption* row : command_rows()) {
      if (!row->applies_to(c.train)) continue;
      if (row->command == options::Emit::kAlways ||
          (row->command == options::Emit::kWhenSet && c.is_set(*row))) {
        flag(std::string(row->flag), options::option_text(*row, c.train));
      }
    }
    flag("--summary", output.string());
    flag("--status-dir", status_dir_for(output).string());
    plan.argv.push_back("--quiet");
    plan.argv.insert(plan.argv.end(), c.extra_args.begin(), c.extra_args.end());
  } else {
    plan.argv.push_back("allreduce-bench");
    flag("--min-bytes", std::to_string(c.sweep.min_bytes));
    flag("--max-bytes", std::to_string(c.sweep.max_bytes));
    flag("--factor", std::to_string(c.sweep.factor));
    flag("--iters", std::to_string(c.sweep.iters));
    flag("--warmup", std::to_string(c.sweep.warmup));
    allreduce_flag();
    flag("--jsonl", output.string());
  }
  if (c.kind == CaseKind::kTrain && c.train.engine == options::Engine::kPytorch) {
    // In place of the trainscope command.
    plan_pytorch_peer(c, ctx, case_interface(suite, c, ctx), output, plan);
  }
  // One host's cores: its processes (mpirun and the ranks, which inherit it)
  // run on the first cores_per_host CPUs this process may use.
  if (c.hosts <= 1 && c.cores_per_host > 0) {
    const std::vector<int> cpus = allowed_cpus();
    const size_t n = std::min(cpus.size(), static_cast<size_t>(c.cores_per_host));
    const std::string list = fmt::format("{}", fmt::join(cpus.begin(), cpus.begin() + n, ","));
    plan.argv.insert(plan.argv.begin(), {"taskset", "-c", list});
  }
  // One host at a CPU share (no cluster): the whole job under the quota a
  // dilated cluster's host runs under, so the report can set it beside the
  // same case at full speed: how far this machine dilates compute alone.
  if (runs_alone_under_quota(c)) {
    plan.argv.insert(plan.argv.begin(), {(netns_scripts_dir() / "cpu-share-run.sh").string(),
                                         fmt::format("{:g}", c.cpu_share), "--"});
  }
  return plan;
}

}  // namespace trainscope::suites
