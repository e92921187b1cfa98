// Gradient reduction strategies on the seed model's gradient arena, against
// one MPI all-reduce of the same total bytes, under mpirun (nccl-tests style:
// one row per strategy, the same columns every time).
//
//   mpirun -np 2 build/bench/grad_sync_bench [--model seed] [--iters 10] [--warmup 2]
//                                            [--allreduce mpi|shm|hier]
//
// busbw = algbw x 2(n-1)/n (docs/METRICS.md); time is the median over
// iterations of the slowest rank. "ratio" is the single all-reduce of the
// whole arena's time over this row's time (= busbw / its busbw; defined on one
// rank too).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "comm/all_reducer.h"
#include "comm/communicator.h"
#include "comm/grad_sync.h"
#include "kernels/storage.h"
#include "profiler/stats.h"
#include "training/param_layout.h"

using namespace trainscope;

int main(int argc, char** argv) {
  std::string model = "seed";
  std::string allreduce = "mpi";
  int iters = 10, warmup = 2;
  for (int i = 1; i < argc; i += 2) {
    const bool known = !std::strcmp(argv[i], "--model") || !std::strcmp(argv[i], "--iters") ||
                       !std::strcmp(argv[i], "--warmup") || !std::strcmp(argv[i], "--allreduce");
    if (!known || i + 1 >= argc) {
      std::fprintf(stderr,
                   "grad_sync_bench: usage: [--model NAME] [--iters N>=1] [--warmup N>=0]"
                   " [--allreduce mpi|shm|hier] (bad argument '%s')\n",
                   argv[i]);
      return 2;
    }
    if (!std::strcmp(argv[i], "--model")) model = argv[i + 1];
    if (!std::strcmp(argv[i], "--allreduce")) allreduce = argv[i + 1];
    if (!std::strcmp(argv[i], "--iters")) iters = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--warmup")) warmup = std::atoi(argv[i + 1]);
  }
  if (iters < 1 || warmup < 0) {
    std::fprintf(stderr, "grad_sync_bench: --iters must be >= 1 and --warmup >= 0\n");
    return 2;
  }
  auto comm = comm::make_communicator("auto");
  const training::ParamLayout layout(training::model_preset(model));
  auto reducer = comm::make_all_reducer(
      *comm, {.algorithm = parse_choice<options::AllReduceAlgorithm>(allreduce, "--allreduce"), .numel = layout.total()});
  const std::span<float> grads = reducer->buffer();
  std::vector<comm::TensorRange> tensors;
  for (const auto& t : layout.tensors()) tensors.push_back({t.offset, t.numel});
  const int n = comm->size();
  const double bytes = static_cast<double>(grads.size_bytes());

  struct Case {
    std::string name;
    options::ReduceStrategy s;
    double bucket_mb;
  };
  std::vector<Case> cases = {{"allreduce(whole)", options::ReduceStrategy::kFused, 0},
                             {"fused 32MiB", options::ReduceStrategy::kFused, 32},
                             {"fused 4MiB", options::ReduceStrategy::kFused, 4},
                             {"fused 1MiB", options::ReduceStrategy::kFused, 1},
                             {"overlap 32MiB", options::ReduceStrategy::kOverlap, 32},
                             {"overlap-poll 32MiB", options::ReduceStrategy::kOverlapPoll, 32},
                             {"per-tensor", options::ReduceStrategy::kPerTensor, 0}};
  if (comm->rank() == 0) {
    fmt::print(
        "# grad_sync_bench: model {} ({:.1f} MiB of gradients, {} tensors), {} ranks, "
        "allreduce {}\n",
        model, bytes / (1 << 20), tensors.size(), n, allreduce);
    fmt::print("# {:>18} {:>7} {:>10} {:>11} {:>11} {:>7}\n", "strategy", "calls", "time(ms)",
               "algbw(GB/s)", "busbw(GB/s)", "ratio");
  }
  double reference_time = 0;
  for (const Case& c : cases) {
    auto sync =
        comm::make_grad_sync(c.s, *reducer, tensors, static_cast<int64_t>(c.bucket_mb * (1 << 20)));
    std::vector<double> times;
    for (int it = 0; it < warmup + iters; ++it) {
      comm->barrier();
      const auto t0 = std::chrono::steady_clock::now();
      sync->begin_step(it);
      sync->on_ready(0);
      sync->finish();
      double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      comm->all_reduce_max(std::span<double>(&dt, 1));
      if (it >= warmup) times.push_back(dt);
    }
    const double t = profiler::summarize(times).median;
    const double algbw = bytes / t / 1e9;
    const double busbw = algbw * 2.0 * (n - 1) / n;
    if (reference_time == 0) reference_time = t;
    if (comm->rank() == 0) {
      fmt::print("  {:>18} {:>7} {:>10.2f} {:>11.2f} {:>11.2f} {:>7.3f}\n", c.name,
                 sync->stats().calls, t * 1e3, algbw, busbw, reference_time / t);
    }
  }
  return 0;
}
