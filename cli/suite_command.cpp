// `trainscope suite list` and `trainscope suite run NAME|FILE`: benchmark
// suites (suites/*.toml) run case by case under mpirun into a results
// database. The logic lives in suites/ (suite_config.h, runner.h).
//
//   trainscope suite list
//   trainscope suite run default --db results.db
//   trainscope suite run my.toml --filter sharded --repeat 3
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/validators.h"
#include "base/atomic_file.h"
#include "base/check.h"
#include "suites/runner.h"
#include "suites/suite_config.h"

namespace trainscope::cli {

std::string this_command_line() {
  std::vector<std::string> args;
  std::string text;
  try {
    text = read_file("/proc/self/cmdline");
  } catch (const Error&) {}
  for (size_t at = 0; at < text.size();) {
    const size_t end = text.find('\0', at);
    args.push_back(text.substr(at, end - at));
    at = end == std::string::npos ? text.size() : end + 1;
  }
  if (!args.empty()) args[0] = "trainscope";
  return suites::shell_join(args);
}

namespace {

// A case's extra_args are flags for `trainscope train`: wrong ones fail now,
// naming the suite and the case, not when the case runs.
void check_extra_args(const suites::Suite& s) {
  for (const auto& c : s.cases) {
    if (c.kind != suites::CaseKind::kTrain || c.extra_args.empty()) continue;
    const std::string where =
        c.extra_args_at.empty() ? (s.file.empty() ? s.name : s.file.string()) : c.extra_args_at;
    try {
      const options::TrainOptions given = check_train_args(c.extra_args);
      if (given.inject_delay && given.inject_delay->rank >= c.ranks) {
        throw Error(fmt::format("--inject-delay: rank {} is not in this case's {} rank{}",
                                given.inject_delay->rank, c.ranks, c.ranks == 1 ? "" : "s"));
      }
    } catch (const Error& e) {
      throw Error(fmt::format("{}: case '{}': extra_args: {}", where, c.name, e.what()));
    }
  }
}

}  // namespace

void add_suite_command(CLI::App& app) {
  CLI::App* suite = app.add_subcommand(
      "suite",
      "Benchmark suites: a TOML file (built-in ones live in suites/) names a base training\n"
      "config and a grid of modes, ranks, reductions, bucket sizes, threads and transports;\n"
      "every case runs as its own mpirun job and lands in a SQLite results database.");
  suite->require_subcommand(1);

  CLI::App* list = suite->add_subcommand("list",
                                         "List the built-in suites with their descriptions "
                                         "and case counts (skipped cases in brackets)");
  list->callback([] {
    const auto names = suites::builtin_suite_names();
    if (names.empty()) {
      throw Error(fmt::format("no built-in suites in {} (set TRAINSCOPE_SUITES_DIR)",
                              suites::builtin_suites_dir().string()));
    }
    std::printf("%-12s %6s  %s\n", "# suite", "cases", "description");
    for (const auto& name : names) {
      const suites::Suite s = suites::resolve_suite(name);
      int skipped = 0;
      for (const auto& c : s.cases) skipped += !c.skip_reason.empty();
      const std::string count = skipped ? fmt::format("{} [{}]", s.cases.size() - skipped, skipped)
                                        : std::to_string(s.cases.size());
      std::printf("%-12s %6s  %s\n", name.c_str(), count.c_str(), s.description.c_str());
    }
  });

  struct Flags {
    std::string suite;
    suites::RunnerOptions o;
    std::string db = "results.db";
    std::string hostfile;
    double timeout_s = 0;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* run = suite->add_subcommand(
      "run",
      "Run every case of a suite (built-in NAME or a .toml FILE), each as its own job: mpirun\n"
      "with --oversubscribe when ranks exceed cores (or hostfile slots), --bind-to from the suite\n"
      "(default none), TCP pinned to the suite's tcp_interface (default loopback); a 1-rank case\n"
      "on the default transport runs without mpirun. Each case is polled for memory, bounded\n"
      "by the suite's timeout, and recorded in --db (a failed or hung case is killed and\n"
      "recorded failed; the suite goes on). Progress goes to stderr, one result row per case\n"
      "to stdout. Ctrl-C kills the running case, records it as interrupted and exits 130.\n"
      "Exit codes: 0 every case ok or skipped, 1 a case failed, 2 bad input, 130 interrupted.");
  run->add_option("suite", f->suite,
                  "Built-in suite name (see `trainscope suite list`) or path "
                  "to a suite .toml file")
      ->required();
  run->add_option("--db", f->db, "Results database (SQLite), created if missing")
      ->capture_default_str()
      ->check(kDbFile);
  run->add_option("--hostfile", f->hostfile,
                  "Open MPI hostfile (`host slots=N` lines, # comments) passed to mpirun; its "
                  "slots decide --oversubscribe. Default: this machine only");
  run->add_option("--mpirun", f->o.mpirun,
                  "The MPI launcher: a name on PATH or a path (e.g. "
                  "scripts/netns-mpirun.sh for the virtual cluster of "
                  "scripts/netns-cluster.sh)")
      ->capture_default_str();
  run->add_option("--tcp-interface", f->o.tcp_interface,
                  "Network interface for Open MPI's TCP traffic (btl_tcp_if_include and "
                  "oob_tcp_if_include), instead of the suite's tcp_interface (default lo). A "
                  "hostfile naming other hosts needs the interface that reaches them");
  run->add_option("--cluster", f->o.cluster,
                  "Run the cases with hosts > 1 on this existing virtual cluster (the PREFIX of "
                  "`scripts/netns-cluster.sh up`; left up). Default: the runner brings up a "
                  "cluster of each case's hosts, cores_per_host and link and takes it down "
                  "afterwards; without root or network namespaces those cases are skipped");

  run->add_option("--extra-mpirun-args", f->o.extra_mpirun_args,
                  "Extra arguments for every mpirun (one value per argument, e.g. "
                  "--extra-mpirun-args=--report-bindings)")
      ->allow_extra_args(false);
  run->add_option("--repeat", f->o.repeat,
                  "Run every case K times (overrides the suite's repetitions)")
      ->check(whole_number<int>(1));
  run->add_option("--order-seed", f->o.order_seed,
                  "With several repetitions the suite runs in rounds, every case once per round, "
                  "each round after the first in a shuffled order (drift of the machine then "
                  "spreads over every case); this seeds the shuffle (default: a random seed, "
                  "recorded with the suite)")
      ->check(whole_number<uint64_t>());
  run->add_option("--filter", f->o.filter, "Run only the cases whose name contains SUBSTR");
  auto* timeout = run->add_option("--timeout", f->timeout_s,
                                  "Per-case timeout in seconds (overrides the suite's timeout_s)")
                      ->check(kPositive);
  run->add_flag("!--no-limits", f->o.measure_limits,
                "Do not measure the machine's limits (sgemm GFLOP/s at the cases' shapes, memcpy "
                "GB/s, all-reduce peak busbw; a few seconds) before the first case: the report "
                "then shows no share of them");
  run->add_flag("--dry-run", f->o.dry_run,
                "Print each case's command (or skip reason) and exit; runs and writes nothing");

  run->callback([f, timeout] {
    f->o.db_path = f->db;
    f->o.hostfile = f->hostfile;
    // Given at all, even as 0: the runner then says it must be positive.
    if (timeout->count() > 0) f->o.timeout_s = f->timeout_s;
    f->o.command_line = this_command_line();
    const suites::Suite s = suites::resolve_suite(f->suite);
    check_extra_args(s);
    const suites::SuiteResult r = suites::run_suite(s, f->o);
    if (r.exit_code() != 0) throw SilentExit{r.exit_code()};
  });
}

}  // namespace trainscope::cli
