// `trainscope allreduce-bench`: the nccl-tests style all-reduce sweep, run
// under mpirun (every rank runs the same command). Logic in
// suites/allreduce_bench.h.
//
//   mpirun -np 2 trainscope allreduce-bench --max-bytes 16M --jsonl rows.jsonl
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/validators.h"
#include "comm/communicator.h"
#include "base/atomic_file.h"
#include "base/check.h"
#include "results/records.h"
#include "suites/allreduce_bench.h"

namespace trainscope::cli {

void add_allreduce_bench_command(CLI::App& app) {
  struct Flags {
    suites::AllReduceOptions o;
    std::string jsonl;
    std::string backend = "auto";
    std::string algorithm = "mpi";
    std::string dtype = "fp32";
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "allreduce-bench",
      "All-reduce bandwidth sweep (nccl-tests all_reduce_perf style), run under mpirun.\n"
      "Per size: barrier, --warmup calls, --iters timed in-place float sums; time = max over\n"
      "ranks of the mean; algbw = bytes/time, busbw = algbw*2(n-1)/n (docs/METRICS.md). An\n"
      "untimed pass checks every element of a known sum (#wrong). Rank 0 prints the table.\n"
      "Exit code 1 if any element was wrong.");
  // 128M, 64KiB, 1G: K, M, G... are powers of 1024, as nccl-tests' -b/-e read them.
  cmd->add_option("--min-bytes", f->o.min_bytes,
                  "Smallest message in bytes, or with a suffix (K, M, G: powers of 1024); at "
                  "least one element (4 bytes, 2 with --comm-dtype bf16)")
      ->transform(kByteSize)
      ->check(whole_number<int64_t>(1))
      ->capture_default_str();
  cmd->add_option("--max-bytes", f->o.max_bytes, "Largest message in bytes, or with a suffix")
      ->transform(kByteSize)
      ->check(whole_number<int64_t>(1))
      ->capture_default_str();
  cmd->add_option("--factor", f->o.factor, "Each size is the previous one times this (>= 2)")
      ->check(whole_number<int>(2))
      ->capture_default_str();
  cmd->add_option("--iters", f->o.iters, "Timed all-reduces per size")
      ->check(whole_number<int>(1))
      ->capture_default_str();
  cmd->add_option("--warmup", f->o.warmup, "Untimed all-reduces per size before timing")
      ->check(whole_number<int>(0))
      ->capture_default_str();
  cmd->add_option("--jsonl", f->jsonl,
                  "Rank 0 writes one AllReduceRow JSON object per size to this file (atomically), "
                  "with the transport and links labels from the MCA settings");
  cmd->add_option("--allreduce", f->algorithm,
                  "Algorithm: mpi (Open MPI's MPI_Allreduce; choose its internal algorithm with "
                  "--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm N), "
                  "shm (MPI-3 shared window, ranks of one host) or hier (shm in each host, MPI "
                  "between hosts)")
      ->capture_default_str();
  cmd->add_option("--comm-dtype", f->dtype,
                  "What travels: fp32, or bf16 (float buffers rounded to bf16 and summed in fp32, "
                  "as trainscope train --comm-dtype bf16; sizes count the bytes sent, 2 per "
                  "element, and the times include the conversions)")
      ->capture_default_str();
  cmd->add_flag("!--no-copy-probe", f->o.copy_probe,
                "Skip the memcpy probe printed after the table (every rank copies the largest "
                "size at once: the bound of a shared-memory all-reduce)");
  cmd->add_option("--comm", f->backend, "Communicator: auto (MPI under mpirun), mpi or local")
      ->capture_default_str();
  cmd->callback([f] {
    f->o.algorithm = parse_choice<options::AllReduceAlgorithm>(f->algorithm, "--algorithm");
    f->o.dtype = parse_choice<options::CommDtype>(f->dtype, "--dtype");
    suites::validate(f->o);
    auto comm = comm::make_communicator(f->backend);
    std::vector<results::AllReduceRow> rows;
    run_on_every_rank(*comm, [&] { rows = suites::run_allreduce_sweep(*comm, f->o, stdout); });
    int64_t wrong = 0;
    for (const auto& r : rows) wrong += r.wrong;
    if (comm->rank() == 0 && !f->jsonl.empty()) {
      std::string text;
      for (const auto& r : rows) {
        nlohmann::json j;
        results::to_json(j, r);
        text += j.dump() + "\n";
      }
      write_file_atomically(f->jsonl, text);
    }
    if (wrong > 0) throw SilentExit{kExitFailure};
  });
}

}  // namespace trainscope::cli
