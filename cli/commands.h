// Each trainscope subcommand lives in its own cli/<name>_command.cpp and
// registers itself on the top-level app through one of these functions.
// A subcommand's callback throws trainscope::Error for bad input; main()
// turns that into a message on stderr and the error's exit code.
#ifndef TRAINSCOPE_CLI_COMMANDS_H_
#define TRAINSCOPE_CLI_COMMANDS_H_

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "options/train_options.h"

namespace trainscope::comm {
class Communicator;
}

namespace trainscope::cli {

void add_version_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_prepare_data_command(CLI::App& app);
void add_monitor_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_suite_command(CLI::App& app);
void add_allreduce_bench_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_check_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_work_command(CLI::App& app);
// The command as typed, every flag included, for a suite's record.
std::string this_command_line();

// `check calibrate`, a subcommand of `check` (cli/check_calibrate_command.cpp).
void add_check_calibrate_command(CLI::App& check);
void add_cluster_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_fuse_command(CLI::App& app);
void add_doctor_command(CLI::App& app);
void add_history_command(CLI::App& app);
void add_simgrid_command(CLI::App& app);

// The options `args` give `train` (the flag parser's Error unless they are
// flags `train` accepts, with values it takes): for suites' extra_args,
// checked before any case runs.
options::TrainOptions check_train_args(const std::vector<std::string>& args);

// Thrown by a command that completed and must make trainscope exit with
// `code` without an error message (monitor passes on its child's status).
struct SilentExit {
  int code;
};

// Runs `fn`, a command's work on every rank of `comm`'s job, and ends it as
// every such command must: a CollectiveError (every rank failed alike) is
// printed once, by rank 0, and becomes SilentExit with its code; any other
// exception on one rank of several is printed with the rank and aborts the
// whole job, so no other rank waits in a collective for it. With one rank
// those propagate unchanged (main prints them).
void run_on_every_rank(comm::Communicator& comm, const std::function<void()>& fn);

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_COMMANDS_H_
