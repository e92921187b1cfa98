// trainscope monitor: memory of a whole process tree (an mpirun job, a
// training run) from /proc, live and summarized.
//
//   trainscope monitor -- mpirun -np 4 build/trainscope train --config c.toml
//   trainscope monitor --pid 12345 --csv mem.csv
//
// The logic lives in profiler/monitor.h; this file only maps flags.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/validators.h"
#include "suites/runner.h"
#include "base/check.h"
#include "profiler/monitor.h"
#include "results/environment.h"
#include "results/results_db.h"

namespace trainscope::cli {
namespace {

// The monitored command becomes a suite "monitor" with one run; the samples go
// to poller_samples. One writer: this process.
void record_in_db(results::ResultsDb& db, const std::vector<std::string>& command, int pid,
                  const profiler::MonitorResult& result) {
  const std::string what =
      command.empty() ? fmt::format("--pid {}", pid) : fmt::format("{}", fmt::join(command, " "));
  results::SuiteInfo info;
  info.name = "monitor";
  info.definition = what;
  info.environment = results::capture_environment("trainscope monitor " + what);
  info.host_facts = results::host_facts(info.environment);
  info.command_line = "trainscope monitor " + what;
  const int64_t suite_id = db.begin_suite(info);
  results::RunCase run_case;
  run_case.case_name = what;
  run_case.mode = "monitor";
  run_case.launcher_command = what;
  run_case.config = {{"command", command}, {"pid", pid}};
  const int64_t run_id = db.begin_run(suite_id, run_case);
  db.add_poller_samples(run_id, result.samples);
  const bool ok = result.exit_code == 0;
  db.finish_run(run_id, ok ? results::RunStatus::kOk : results::RunStatus::kFailed,
                result.exit_code, ok ? "" : fmt::format("exit code {}", result.exit_code), nullptr);
  db.finish_suite(suite_id);
  std::fprintf(stderr, "monitor: %zu samples recorded in %s (suite %lld, run %lld)\n",
               result.samples.size(), db.path().c_str(), static_cast<long long>(suite_id),
               static_cast<long long>(run_id));
}

}  // namespace

void add_monitor_command(CLI::App& app) {
  struct Flags {
    std::vector<std::string> command;
    int pid = 0;
    double interval_ms = 200;
    double plain_every_s = 1.0;
    std::string csv;
    std::string db;
    std::string display = "auto";
    bool no_pss = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "monitor",
      "Run COMMAND (or attach to --pid) and poll the memory (RSS, PSS) of its whole process\n"
      "tree from /proc until it exits: MPI launchers, ranks (from OMPI_COMM_WORLD_RANK /\n"
      "PMIX_RANK / PMI_RANK in their environment) and other processes. Shows a live view, then\n"
      "a per-process and total summary (peak and average). Exits with COMMAND's exit code\n"
      "(128+N if killed by signal N; 127 if not found). SIGINT/SIGTERM sent to the monitor are\n"
      "forwarded to COMMAND.\n"
      "Usage: trainscope monitor [options] -- COMMAND [ARGS...]\n"
      "       trainscope monitor [options] --pid PID");
  sub->add_option("command", flags->command,
                  "Command to run and monitor; put it after -- so its own flags are not "
                  "taken for the monitor's");
  sub->add_option("--pid", flags->pid,
                  "Attach to this running process and its descendants instead of starting a "
                  "command; stops when it exits (exit code 0: a non-child's status is unknown)")
      ->check(whole_number<int>(1));
  sub->add_option("--interval", flags->interval_ms,
                  "Milliseconds between polls of the process tree")
      ->capture_default_str()
      ->check(kPositive);
  sub->add_option("--csv", flags->csv,
                  "Write every sample (time_s, pid, ppid, role, rank, rss_bytes, pss_bytes, "
                  "command) to this CSV file at the end (written atomically)");
  sub->add_option("--db", flags->db,
                  "Also record the samples in this results database (SQLite, created if "
                  "missing): a suite named 'monitor' with one run whose case is the command, "
                  "status ok (exit 0) or failed, and every sample in poller_samples")
      ->check(kDbFile);
  sub->add_option("--display", flags->display,
                  "Progress output: auto (live if stdout is a terminal, else plain), live "
                  "(redrawn in place), plain (one line per --plain-every), none")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "live", "plain", "none"}));
  sub->add_option("--plain-every", flags->plain_every_s,
                  "Seconds between progress lines in plain display")
      ->capture_default_str()
      ->check(kPositive);
  sub->add_flag("--no-pss", flags->no_pss,
                "Do not read PSS (/proc/PID/smaps_rollup): cheaper polls for very large "
                "processes; PSS columns show -");

  sub->callback([flags] {
    if (flags->command.empty() == (flags->pid == 0))
      throw Error(flags->pid != 0
                      ? "monitor: give either --pid or a COMMAND, not both"
                      : "monitor: nothing to monitor: give a COMMAND after -- or --pid PID");
    if (flags->pid < 0)
      throw Error(fmt::format("monitor: --pid {} is not a valid PID", flags->pid));
    if (!(flags->interval_ms > 0) || !std::isfinite(flags->interval_ms))
      throw Error(
          fmt::format("monitor: --interval must be a positive number of milliseconds, got {}",
                      flags->interval_ms));
    if (!(flags->plain_every_s > 0))
      throw Error(
          fmt::format("monitor: --plain-every must be positive, got {}", flags->plain_every_s));

    // Refuse a --csv that cannot be written before the run, not after it.
    if (!flags->csv.empty()) {
      const std::filesystem::path parent = std::filesystem::absolute(flags->csv).parent_path();
      if (!std::filesystem::is_directory(parent))
        throw Error(fmt::format("monitor: --csv {}: directory {} does not exist", flags->csv,
                                parent.string()));
    }

    // Open (and migrate) the database first: a bad --db fails before the run.
    std::optional<results::ResultsDb> db;
    if (!flags->db.empty()) db.emplace(results::ResultsDb::open_for_writing(flags->db));

    profiler::MonitorOptions options;
    options.command = flags->command;
    options.attach_pid = flags->pid;
    options.interval_seconds = flags->interval_ms / 1000.0;
    options.plain_every_seconds = flags->plain_every_s;
    options.read_pss = !flags->no_pss;
    options.display = flags->display == "live"    ? profiler::MonitorDisplay::kLive
                      : flags->display == "plain" ? profiler::MonitorDisplay::kPlain
                      : flags->display == "none"  ? profiler::MonitorDisplay::kNone
                                                  : profiler::MonitorDisplay::kAuto;
    const profiler::MonitorResult result = profiler::run_monitor(options);
    if (!flags->csv.empty()) profiler::write_samples_csv(flags->csv, result.samples);
    if (db) record_in_db(*db, flags->command, flags->pid, result);
    std::fputs(profiler::format_summary(result).c_str(), stdout);
    std::fflush(stdout);
    if (result.exit_code != 0) throw SilentExit{result.exit_code};
  });
}

}  // namespace trainscope::cli
