// The command line of one suite case: `mpirun -np N ... trainscope
// train|allreduce-bench ...`, or the bare trainscope command for a one-rank
// case on the default transport without a hostfile.
//
// mpirun gets --oversubscribe when the ranks exceed the cores (or the
// hostfile's slots), --bind-to from the suite (default none), the root-allow
// variables when running as root, and the transport's MCA settings;
// out-of-band and TCP traffic are pinned to the suite's tcp_interface (default
// lo, so single-box runs never leave 127.0.0.0/8), or to
// PlanContext::tcp_interface. A case with an Open MPI all-reduce algorithm
// gets `--mca coll_tuned_use_dynamic_rules 1 --mca
// coll_tuned_allreduce_algorithm N` (in LaunchPlan::transport too), and a
// replaying case (replay_from) on hosts without cores of their own `--mca
// mpi_yield_when_idle 1`; the
// trainscope command gets --allreduce and --zero only when not the default,
// a LoRA case --fine-tune lora with every --lora-* setting, a case with
// init_from --init-from DIR instead of --model. A hostfile naming other hosts
// needs an interface that reaches them: with lo the job would hang until its
// timeout, so check_hosts_reachable rejects that combination up front.
//
// Thread-safety: pure functions (is_this_host reads the interfaces).
#ifndef TRAINSCOPE_SUITES_LAUNCH_PLAN_H_
#define TRAINSCOPE_SUITES_LAUNCH_PLAN_H_

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "suites/cpus.h"
#include "suites/suite_config.h"

namespace trainscope::suites {

// What the runner needs to know about the machine to plan a case.
struct PlanContext {
  std::filesystem::path trainscope_binary;
  std::string mpirun;  // resolved path
  std::filesystem::path hostfile;
  int slots = 1;  // cores, or the hostfile's total slots
  bool as_root = false;
  std::vector<std::string> extra_mpirun_args;
  std::string tcp_interface;  // empty: the suite's
};

struct LaunchPlan {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // extra NAME=VALUE entries
  bool uses_mpirun = false;
  nlohmann::json transport = nlohmann::json::object();  // MCA settings asked for
  // Run to its end before the job, unpolled (a pytorch case's export,
  // suites/pytorch_peer.h); empty: none. `prepare_removes` are removed first.
  std::vector<std::string> prepare;
  std::vector<std::filesystem::path> prepare_removes;
};

// The case's transport as its runs record it (RunCase::links): for tcp its
// btl_tcp_links ("1", "4"), else the transport ("shm", "auto").
std::string case_links(const SuiteCase& c);

// Whether the case runs under mpirun.
bool needs_mpirun(const SuiteCase& c, const PlanContext& ctx);

// The command for one case; `output` is the --summary (train) or --jsonl
// (allreduce) file the job writes. Train jobs also keep their ranks' status
// files in status_dir_for(output).
LaunchPlan plan_case(const Suite& suite, const SuiteCase& c, const PlanContext& ctx,
                     const std::filesystem::path& output);

// The --status-dir of a train job writing `output`: "case-3.json" ->
// "case-3-status" beside it.
std::filesystem::path status_dir_for(const std::filesystem::path& output);

// find_program(name, flag), but a program that is not found or
// not executable is bad input (kExitBadInput) to the suite.
std::string resolve_executable(const std::string& name, const std::string& flag);

// The interface a case's TCP traffic is pinned to: the runner's, else the
// case's, else the suite's.
std::string case_interface(const Suite& suite, const SuiteCase& c, const PlanContext& ctx);
// Error naming the hostfile and host when TCP is pinned to lo (`tcp_if`)
// but a host is not this machine.
void check_hosts_reachable(const std::vector<HostEntry>& hosts, const std::string& tcp_if,
                           const std::filesystem::path& hostfile);

// argv as one line a POSIX shell would split back into argv.
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace trainscope::suites

#endif  // TRAINSCOPE_SUITES_LAUNCH_PLAN_H_
