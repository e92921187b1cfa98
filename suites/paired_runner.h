// A paired comparison of two builds on one machine, in one job: is the head
// slower than the base? (`trainscope compare`; the statistics are
// analysis/paired.h.)
//
// Every case's repetitions run in pairs: one base run and one head run back
// to back, their order drawn at random per pair from a recorded seed, the
// pairs of all cases interleaved (each round runs one pair of every case
// still open, in a shuffled order). A pair's figure is log(head / base) of
// the two runs' step-time medians (each over its steps after the warm-up
// the run detected). After each pair the case's interval is recomputed; a
// case stops when it is decided (PASS or REGRESSION, no sooner than
// min_pairs), and the comparison when every case is, or at the cap: after
// max_pairs pairs of a case, or when the next pair would pass max_minutes.
// An undecided case is then INCONCLUSIVE, with the pairs it would need. A
// run that fails fails its case (FAILED); a case that cannot run here is
// SKIPPED with the reason.
//
// The binaries may be any executables taking trainscope's `train` flags (a
// wrapper script too), so a test can plant a slowdown in the head alone.
// Both sides' runs, the pairs, the verdicts, the binaries and what `BINARY
// version` said are recorded in the results database
// (results/comparison_records.h) as they happen.
//
// Thread-safety: one thread; installs SIGINT/SIGTERM handlers while it runs.
#ifndef TRAINSCOPE_SUITES_PAIRED_RUNNER_H_
#define TRAINSCOPE_SUITES_PAIRED_RUNNER_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/paired.h"
#include "results/comparison_records.h"
#include "suites/runner.h"
#include "suites/suite_config.h"

namespace trainscope::suites {

struct PairedOptions {
  // db_path, mpirun, filter, timeout, order_seed (the pairs' order), out,
  // progress and command_line are used; repetitions come from the pairs.
  RunnerOptions runner;
  std::filesystem::path base_binary;
  std::filesystem::path head_binary;
  double threshold_pct = 10;  // a slowdown beyond this is a regression
  int min_pairs = analysis::kMinPairsForInterval;
  // 40: the gate suite's noisiest case (fused, whose runs fall into a ~40%
  // slower mode now and then) was left INCONCLUSIVE at 20 pairs in 1 of 3
  // A/A runs on a quiet VM, 146 s into its 6 minutes, "needs about 36".
  int max_pairs = 40;
  double max_minutes = 6;
};

struct PairedResult {
  int64_t comparison_id = 0;
  std::string verdict;  // PASS, REGRESSION, FAILED, INCONCLUSIVE or INTERRUPTED
  std::vector<results::ComparisonCase> cases;
  double seconds = 0;
  // 0 PASS; 1 REGRESSION or a failed run; 4 INCONCLUSIVE; 130 interrupted.
  int exit_code() const;
};

// Exit code of an INCONCLUSIVE comparison: distinct from bad input (2), so
// that a script can tell "could not decide" from "could not run".
inline constexpr int kExitInconclusive = 4;

// Bad input (a binary that is missing or says no version, a threshold or cap
// out of range, the suite's plan) throws trainscope::Error before the
// database is opened.
PairedResult run_paired(const Suite& suite, const PairedOptions& options);

// What `binary version` prints first ("trainscope 0.1.0 (git 7b1ef05...)");
// Error naming the binary when it cannot run or says nothing.
std::string binary_version(const std::filesystem::path& binary);

// The result table: one row per case, the same columns every time.
std::string format_paired_header(int name_width);
std::string format_paired_row(const results::ComparisonCase& c, double base_ms, double head_ms,
                              int name_width);

}  // namespace trainscope::suites

#endif  // TRAINSCOPE_SUITES_PAIRED_RUNNER_H_
