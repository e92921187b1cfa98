// ZeRO-1 against plain data parallelism, under mpirun: the same run twice
// (sharded data, fused reduction), once with every rank holding the whole
// AdamW state and once with --zero 1, one row per step with both losses and
// their relative difference, then the tracked optimizer state per rank.
//
//   mpirun -np 2 build/bench/zero_bench [--model seed] [--steps 20] [--allreduce mpi|shm]
//                                       [--batch N] [--block N]   (default: the preset's)
//                                       [--bucket-mb 32]
//
// Exit 1 when a loss differs by more than 1e-6 relative, when a run did not
// record all --steps steps (nothing compared is no evidence), or when a rank's
// state is not the two moments of its slice of every bucket (--bucket-mb) to
// the byte (the target); 2 for bad arguments.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "cli/validators.h"
#include "comm/all_reducer.h"
#include "comm/communicator.h"
#include "comm/grad_sync.h"
#include "base/check.h"
#include "training/model_config.h"
#include "training/param_layout.h"
#include "training/trainer.h"

using namespace trainscope;

namespace {

struct Flags {
  options::TrainOptions o;
  std::string allreduce = "mpi";
};

void add_flags(CLI::App& app, Flags& f) {
  app.add_option("--model", f.o.model, "Model preset (training/model_config.h)")
      ->capture_default_str();
  app.add_option("--steps", f.o.steps, "Optimizer steps of each run")
      ->check(cli::at_least(1))
      ->capture_default_str();
  app.add_option("--allreduce", f.allreduce, "All-reduce algorithm: mpi, shm or hier")
      ->capture_default_str();
  app.add_option("--batch", f.o.batch, "Global batch in sequences (default: the preset's)")
      ->check(cli::kPositive);
  app.add_option("--block", f.o.block, "Tokens per example (default: the preset's)")
      ->check(cli::kPositive);
  app.add_option("--bucket-mb", f.o.bucket_mb, "Fused bucket size in MiB")
      ->check(cli::kPositive)
      ->capture_default_str();
}

results::RunSummary run(comm::Communicator& comm, options::TrainOptions o, int zero) {
  o.zero = zero;
  results::RunSummary s = training::run_training(o, comm);
  if (s.status == results::RunStatus::kFailed) {
    throw Error(fmt::format("the {} run failed: {}", zero ? "zero-1" : "plain", s.error),
                kExitFailure);
  }
  return s;
}

// Prints a row per step; true when both runs recorded every step and each
// pair of losses agrees to 1e-6 relative.
bool compare_losses(const results::RunSummary& plain, const results::RunSummary& zero,
                    int64_t steps, bool print) {
  const std::vector<results::StepRecord> none;
  const auto& a = plain.steps.empty() ? none : plain.steps[0];
  const auto& b = zero.steps.empty() ? none : zero.steps[0];
  if (print) {
    fmt::print("# {:>5} {:>12} {:>12} {:>10}\n", "step", "plain loss", "zero-1 loss", "rel diff");
  }
  double worst = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double rel = std::abs(a[i].loss - b[i].loss) / std::abs(a[i].loss);
    worst = std::max(worst, rel);
    if (print) fmt::print("  {:>5} {:>12.7f} {:>12.7f} {:>10.2e}\n", i, a[i].loss, b[i].loss, rel);
  }
  const bool all = std::cmp_equal(a.size(), steps) && std::cmp_equal(b.size(), steps);
  if (print) {
    fmt::print(
        "# worst relative loss difference {:.2e} (target <= 1e-6) over {} and {} of {} "
        "steps\n",
        worst, a.size(), b.size(), steps);
  }
  return all && worst <= 1e-6;  // a NaN fails too
}

// Prints each rank's tracked optimizer state; true when zero-1's is exactly
// the two moments of the rank's slice of every bucket.
bool check_state(const results::RunSummary& plain, const results::RunSummary& zero, int64_t P,
                 double bucket_mb, int n, bool print) {
  if (print) {
    fmt::print("# {:>5} {:>16} {:>16} {:>16}\n", "rank", "plain state (B)", "zero-1 state (B)",
               "total/N (B)");
  }
  bool ok = std::cmp_equal(plain.ranks.size(), n) && std::cmp_equal(zero.ranks.size(), n);
  for (int r = 0; ok && r < n; ++r) {
    const auto cat = kernels::MemoryCategory::kOptimizerState;
    const int64_t p = plain.ranks[r].tracked_peak_by_category[cat];
    const int64_t z = zero.ranks[r].tracked_peak_by_category[cat];
    int64_t mine = 0;  // this rank's slice of every bucket
    for (const auto& b : comm::bucket_ranges(P, static_cast<int64_t>(bucket_mb * (1 << 20)))) {
      mine += comm::slice_of(b.numel, n, r).numel;
    }
    ok = ok && z == 8 * mine;
    if (print) fmt::print("  {:>5} {:>16} {:>16} {:>16.1f}\n", r, p, z, 8.0 * P / n);
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  options::TrainOptions& o = f.o;
  o.model = "seed";
  o.steps = 20;
  o.threads = 1;
  o.quiet = true;
  o.data.source = "builtin:stories";
  o.data.data_mode = options::DataMode::kSharded;
  o.reduce = options::ReduceStrategy::kFused;
  CLI::App app{"ZeRO-1 against plain data parallelism, under mpirun: losses and optimizer state"};
  add_flags(app, f);
  auto comm = comm::make_communicator("auto");
  const int n = comm->size(), rank = comm->rank();
  results::RunSummary plain, zero;
  int64_t P = 0;
  try {
    app.parse(argc, argv);
    o.allreduce = parse_choice<options::AllReduceAlgorithm>(f.allreduce, "--allreduce");
    P = training::ParamLayout(training::model_preset(o.model)).total();
    plain = run(*comm, o, 0);
    zero = run(*comm, o, 1);
  } catch (const CLI::ParseError& e) {
    if (rank == 0) app.exit(e);  // --help, or the flag's error and the usage
    return e.get_exit_code() == 0 ? 0 : 2;
  } catch (const Error& e) {
    // Bad flags are every rank's (exit 2); a failed run is exit 1.
    if (rank == 0) std::fprintf(stderr, "zero_bench: %s\n", e.what());
    return e.exit_code();
  }
  if (rank == 0) {
    fmt::print("# zero_bench: model {} ({} parameters), {} ranks, allreduce {}, {} steps\n",
               o.model, P, n, enum_name(o.allreduce), o.steps);
  }
  const bool losses = compare_losses(plain, zero, o.steps, rank == 0);
  const bool state = check_state(plain, zero, P, o.bucket_mb, n, rank == 0);
  if (rank == 0) fmt::print("# {}\n", losses && state ? "OK" : "FAILED");
  return losses && state ? 0 : 1;
}
