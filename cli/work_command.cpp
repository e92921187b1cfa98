// `trainscope work [--base BIN] --head BIN SUITE`: the deterministic work
// lane of the speed gate (suites/work_lane.h): each case under callgrind,
// counting its steps' compute phases, two builds compared phase by phase.
//
//   trainscope work --base build-base/trainscope --head build/trainscope gate
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/validators.h"
#include "base/check.h"
#include "suites/suite_config.h"
#include "suites/work_lane.h"

namespace trainscope::cli {

void add_work_command(CLI::App& app) {
  struct Flags {
    std::string suite;
    std::string base, head;
    std::string db = "work.db";
    suites::WorkOptions o;
    double timeout_s = 0;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "work",
      "Count the work of each case's steps under valgrind's callgrind, phase by phase, and\n"
      "compare two builds: instructions and estimated cycles (L1 hits + 5 x LL hits + 35 x RAM\n"
      "accesses under a fixed cache geometry) of the data, forward, backward and optimizer\n"
      "phases of steps 1.. (step 0 sets up), per rank, with communication and waiting left\n"
      "out, each case training --model at --batch x --block (default tiny, 4 x 32). Counts\n"
      "repeat to the instruction on the same build whatever the machine does, so a change\n"
      "of a fraction of a percent is seen where step times cannot see 10%.\n"
      "Each run has ASLR off, one thread a rank, --gemm openblas, and the ISA held to AVX2\n"
      "(OPENBLAS_CORETYPE=Haswell, DNNL_MAX_CPU_ISA=AVX2, TRAINSCOPE_MAX_CPU_ISA=avx2):\n"
      "valgrind runs no AVX-512, so the binaries must be built without it\n"
      "(-DTRAINSCOPE_MARCH=x86-64-v3 on a CPU that has it). Without --base the head's counts\n"
      "are only recorded. --repeats 2 runs each side twice and checks that the counts agree.\n"
      "Everything goes to --db; `trainscope report` shows it.\n"
      "Exit codes: 0 PASS, 1 REGRESSION (a phase's work up by more than --threshold), a run\n"
      "failed or the repeats differ, 2 bad input, 4 INCONCLUSIVE (the base counts nothing: a\n"
      "build from before the work lane), 130 interrupted.");
  sub->add_option("suite", f->suite, "Built-in suite name (e.g. gate) or a suite .toml file")
      ->required();
  sub->add_option("--base", f->base, "The base build's trainscope (or a wrapper)");
  sub->add_option("--head", f->head, "The head build's trainscope (or a wrapper)")->required();
  sub->add_option("--db", f->db, "Results database (SQLite), created if missing")
      ->capture_default_str()
      ->check(kDbFile);
  sub->add_option("--threshold", f->o.threshold_pct,
                  "Percent by which a phase's instructions, estimated cycles or L1 data misses "
                  "(one-rank cases) must grow to be a regression")
      ->capture_default_str()
      ->check(kPositive);
  sub->add_option("--steps", f->o.steps, "Steps each run trains (steps 1.. are counted)")
      ->capture_default_str()
      ->check(whole_number<int>(2));
  sub->add_option("--model", f->o.model,
                  "The model every case trains under the lane (\"\": each case's own); the counts "
                  "are of the code, and callgrind simulates dense GEMMs ~1000x slower than the CPU")
      ->capture_default_str();
  sub->add_option("--batch", f->o.batch, "Global batch of every case (0: each case's own)")
      ->capture_default_str()
      ->check(whole_number<int>(0));
  sub->add_option("--block", f->o.block, "Tokens per example of every case (0: each case's own)")
      ->capture_default_str()
      ->check(whole_number<int>(0));
  sub->add_option("--repeats", f->o.repeats,
                  "Runs of each side; with 2 or more their counts must agree within 0.1%")
      ->capture_default_str()
      ->check(whole_number<int>(1));
  sub->add_option("--keep-dumps", f->o.keep_dumps,
                  "Keep each run's callgrind files in DIR/SIDE-CASE-REPEAT/ (for "
                  "callgrind_annotate); by default they are removed");
  sub->add_option("--filter", f->o.runner.filter, "Count only cases whose name contains SUBSTR");
  sub->add_option("--valgrind", f->o.valgrind, "The valgrind program")->capture_default_str();
  sub->add_option("--mpirun", f->o.runner.mpirun, "The MPI launcher: a name on PATH or a path")
      ->capture_default_str();
  auto* timeout = sub->add_option("--timeout", f->timeout_s,
                                  "Per-run timeout in seconds (default 1800: callgrind is slow)")
                      ->check(kPositive);
  sub->callback([f, timeout] {
    f->o.base_binary = f->base;
    f->o.head_binary = f->head;
    f->o.runner.db_path = f->db;
    if (timeout->count() > 0) f->o.runner.timeout_s = f->timeout_s;
    f->o.runner.command_line = this_command_line();
    const suites::Suite s = suites::resolve_suite(f->suite);
    const suites::WorkResult r = suites::run_work_lane(s, f->o);
    if (r.verdict == "INTERRUPTED") throw SilentExit{130};
    if (r.verdict == "INCONCLUSIVE") throw SilentExit{suites::kExitInconclusive};
    if (r.exit_code() != 0) throw SilentExit{r.exit_code()};
  });
}

}  // namespace trainscope::cli
