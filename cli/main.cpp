#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>

#include "cli/commands.h"
#include "kernels/blas_core.h"
#include "base/check.h"

namespace {

// Output that did not reach stdout (a full disk, a closed pipe) means the
// work failed: a script must not take a truncated table for a result.
int check_stdout(int code) {
  std::cout.flush();
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout) || std::cout.bad()) {
    std::fprintf(stderr, "trainscope: error: writing to standard output failed%s%s\n",
                 errno ? ": " : "", errno ? std::strerror(errno) : "");
    return code == trainscope::kExitOk ? trainscope::kExitFailure : code;
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trainscope;
  // Before MPI or any GEMM: may run this program again with the right kernels.
  try {
    kernels::choose_blas_core(argv);
  } catch (const Error& e) {  // a bad TRAINSCOPE_MAX_CPU_ISA
    std::fprintf(stderr, "trainscope: error: %s\n", e.what());
    return e.exit_code();
  }
  CLI::App app{
      "trainscope: train a Llama-style LM on CPUs, alone or as every rank of an\n"
      "mpirun job, and measure it: memory by category, step phases, collectives.\n"
      "Exit codes: 0 ok, 1 the work failed, 2 bad input."};
  app.require_subcommand(1);
  app.fallthrough(false);

  cli::add_train_command(app);
  cli::add_version_command(app);
  cli::add_prepare_data_command(app);
  cli::add_monitor_command(app);
  cli::add_tokenize_command(app);
  cli::add_suite_command(app);
  cli::add_allreduce_bench_command(app);
  cli::add_report_command(app);
  cli::add_check_command(app);
  cli::add_compare_command(app);
  cli::add_work_command(app);
  cli::add_history_command(app);
  cli::add_cluster_command(app);
  cli::add_generate_command(app);
  cli::add_fuse_command(app);
  cli::add_doctor_command(app);
  cli::add_simgrid_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return check_stdout(code == 0 ? kExitOk : kExitBadInput);
  } catch (const cli::SilentExit& e) {
    return check_stdout(e.code);
  } catch (const Error& e) {
    std::fprintf(stderr, "trainscope: error: %s\n", e.what());
    return e.exit_code();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "trainscope: error: out of memory\n");
    return kExitFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trainscope: error: %s\n", e.what());
    return kExitFailure;
  }
  return check_stdout(kExitOk);
}
