// `trainscope compare --base BIN --head BIN SUITE`: the paired comparison of
// two builds in one job (suites/paired_runner.h), the speed gate CI runs.
//
//   trainscope compare --base build-base/trainscope --head build/trainscope gate
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/validators.h"
#include "base/check.h"
#include "suites/paired_runner.h"
#include "suites/suite_config.h"

namespace trainscope::cli {

void add_compare_command(CLI::App& app) {
  struct Flags {
    std::string suite;
    std::string base, head;
    std::string db = "compare.db";
    suites::PairedOptions o;
    double timeout_s = 0;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "compare",
      "Is the head build slower than the base? Runs every case of SUITE in pairs, one base\n"
      "run and one head run back to back in an order drawn at random per pair (--seed), the\n"
      "pairs of all cases interleaved, so that the machine's drift over minutes cancels\n"
      "within each pair instead of biasing a stored baseline. A pair's figure is the log of\n"
      "head / base of the two runs' step-time medians (each after its detected warm-up); a\n"
      "case's estimate is their Hodges-Lehmann median with a Wilcoxon signed-rank 95%\n"
      "interval, shown as head/base \"1.153x [1.12, 1.19]\". Pairs are added until each case\n"
      "is decided: REGRESSION when the interval lies above 1 and the estimate above\n"
      "1 + --threshold; PASS when the interval lies below 1 + --threshold. At the cap\n"
      "(--max-pairs, --max-minutes) an undecided case is INCONCLUSIVE with the pairs it would\n"
      "need. Both suites' runs, the pairs, binaries, what `BIN version` says and the\n"
      "environment go to --db; `trainscope report` shows the comparison. BIN may be any\n"
      "executable taking `train` flags (a wrapper script too).\n"
      "Exit codes: 0 PASS, 1 REGRESSION or a failed run, 2 bad input, 4 INCONCLUSIVE,\n"
      "130 interrupted.");
  sub->add_option("suite", f->suite, "Built-in suite name (e.g. gate) or a suite .toml file")
      ->required();
  sub->add_option("--base", f->base, "The base build's trainscope (or a wrapper)")->required();
  sub->add_option("--head", f->head, "The head build's trainscope (or a wrapper)")->required();
  sub->add_option("--db", f->db, "Results database (SQLite), created if missing")
      ->capture_default_str()
      ->check(kDbFile);
  sub->add_option("--threshold", f->o.threshold_pct,
                  "Percent by which the head's step time must be worse to be a regression")
      ->capture_default_str()
      ->check(kPositive);
  sub->add_option("--min-pairs", f->o.min_pairs,
                  "Pairs a case runs before any verdict (6 is the fewest whose signed-rank "
                  "interval reaches 95%)")
      ->capture_default_str()
      ->check(whole_number<int>(analysis::kMinPairsForInterval));
  sub->add_option("--max-pairs", f->o.max_pairs, "Pairs a case runs at most")
      ->capture_default_str()
      ->check(whole_number<int>(analysis::kMinPairsForInterval));
  sub->add_option("--max-minutes", f->o.max_minutes,
                  "Minutes the comparison runs at most: no pair starts that would end later")
      ->capture_default_str()
      ->check(kPositive);
  sub->add_option("--seed", f->o.runner.order_seed,
                  "Seed of the pairs' order (default: drawn, and recorded with the comparison)")
      ->check(whole_number<uint64_t>());
  sub->add_option("--filter", f->o.runner.filter, "Compare only cases whose name contains SUBSTR");
  sub->add_option("--mpirun", f->o.runner.mpirun, "The MPI launcher: a name on PATH or a path")
      ->capture_default_str();
  auto* timeout = sub->add_option("--timeout", f->timeout_s,
                                  "Per-run timeout in seconds (overrides the suite's timeout_s)")
                      ->check(kPositive);
  sub->callback([f, timeout] {
    f->o.base_binary = f->base;
    f->o.head_binary = f->head;
    f->o.runner.db_path = f->db;
    if (timeout->count() > 0) f->o.runner.timeout_s = f->timeout_s;
    f->o.runner.command_line = this_command_line();
    const suites::Suite s = suites::resolve_suite(f->suite);
    const suites::PairedResult r = suites::run_paired(s, f->o);
    if (r.exit_code() != 0) throw SilentExit{r.exit_code()};
  });
}

}  // namespace trainscope::cli
