// ZeRO-1 against plain data parallelism, under mpirun: the same run twice
// (sharded data, fused reduction), once with every rank holding the whole
// AdamW state and once with --zero 1, one row per step with both losses and
// their relative difference, then the tracked optimizer state per rank.
//
//   mpirun -np 2 build/bench/zero_bench [--model seed] [--steps 20] [--allreduce mpi|shm]
//                                       [--batch N] [--block N]   (default: the preset's)
//
// Exit 1 when a loss differs by more than 1e-6 relative or a rank's state is
// not the two moments of its slice of every bucket (--bucket-mb, default 32)
// to the byte (the target); 2 for bad arguments.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "comm/all_reducer.h"
#include "comm/communicator.h"
#include "comm/grad_sync.h"
#include "kernels/check.h"
#include "training/model_config.h"
#include "training/param_layout.h"
#include "training/trainer.h"

using namespace trainscope;

namespace {

results::RunSummary run(comm::Communicator& comm, training::TrainOptions o, int zero) {
  o.zero = zero;
  return training::run_training(o, comm);
}

}  // namespace

int main(int argc, char** argv) {
  training::TrainOptions o;
  o.model = "seed";
  o.steps = 20;
  o.threads = 1;
  o.quiet = true;
  o.data.source = "builtin:stories";
  o.data.data_mode = training::DataMode::kSharded;
  o.reduce = comm::ReduceStrategy::kFused;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc || (flag != "--model" && flag != "--steps" && flag != "--allreduce" &&
                          flag != "--batch" && flag != "--block")) {
      std::fprintf(stderr, "zero_bench: usage: [--model NAME] [--steps N] [--allreduce mpi|shm] "
                           "[--batch N] [--block N] (bad argument '%s')\n", argv[i]);
      return 2;
    }
    const char* v = argv[i + 1];
    if (flag == "--model") o.model = v;
    if (flag == "--steps") o.steps = std::atoll(v);
    if (flag == "--batch") o.batch = std::atoi(v);
    if (flag == "--block") o.block = std::atoi(v);
    if (flag == "--allreduce") o.allreduce = comm::parse_allreduce_algorithm(v);
  }
  auto comm = comm::make_communicator("auto");
  const int n = comm->size(), rank = comm->rank();
  results::RunSummary plain, zero;
  try {
    plain = run(*comm, o, 0);
    zero = run(*comm, o, 1);
  } catch (const Error& e) {
    if (rank == 0) std::fprintf(stderr, "zero_bench: %s\n", e.what());
    return 2;
  }
  const int64_t P = training::ParamLayout(training::model_preset(o.model)).total();
  bool ok = true;
  double worst = 0;
  if (rank == 0) {
    fmt::print("# zero_bench: model {} ({} parameters), {} ranks, allreduce {}, {} steps\n",
               o.model, P, n, comm::allreduce_algorithm_name(o.allreduce), o.steps);
    fmt::print("# {:>5} {:>12} {:>12} {:>10}\n", "step", "plain loss", "zero-1 loss", "rel diff");
  }
  for (std::size_t i = 0; i < plain.steps[0].size() && i < zero.steps[0].size(); ++i) {
    const double a = plain.steps[0][i].loss, b = zero.steps[0][i].loss;
    const double rel = std::abs(a - b) / std::abs(a);
    worst = std::max(worst, rel);
    if (rank == 0) fmt::print("  {:>5} {:>12.7f} {:>12.7f} {:>10.2e}\n", i, a, b, rel);
  }
  ok = ok && worst <= 1e-6 && plain.steps[0].size() == zero.steps[0].size();
  if (rank == 0) {
    fmt::print("# {:>5} {:>16} {:>16} {:>16}\n", "rank", "plain state (B)", "zero-1 state (B)",
               "total/N (B)");
  }
  for (int r = 0; r < n; ++r) {
    const auto cat = kernels::MemoryCategory::kOptimizerState;
    const int64_t p = plain.ranks[r].tracked_peak_by_category[cat];
    const int64_t z = zero.ranks[r].tracked_peak_by_category[cat];
    int64_t mine = 0;  // this rank's slice of every bucket
    for (const auto& b : comm::bucket_ranges(P, static_cast<int64_t>(o.bucket_mb * (1 << 20)))) {
      mine += comm::slice_of(b.numel, n, r).numel;
    }
    ok = ok && z == 8 * mine;
    if (rank == 0) fmt::print("  {:>5} {:>16} {:>16} {:>16.1f}\n", r, p, z, 8.0 * P / n);
  }
  if (rank == 0) {
    fmt::print("# worst relative loss difference {:.2e} (target <= 1e-6): {}\n", worst,
               ok ? "OK" : "FAILED");
  }
  return ok ? 0 : 1;
}
