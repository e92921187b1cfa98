// All-reduce bandwidth sweep over comm::Communicator, after nccl-tests'
// all_reduce_perf: for each message size, a barrier, warm-up calls, a timed
// loop of in-place float sums (or, with dtype bf16, float buffers sent as
// bf16: the message size counts the bytes sent, 2 per element, and the time
// includes the conversions, as --comm-dtype bf16 trains); the time of a size
// is the largest per-rank mean (the slowest rank bounds a collective). algbw =
// bytes / time and busbw = algbw * 2(n-1)/n (docs/METRICS.md derives it).
// Each timed call's time (the slowest rank's) is kept too: the samples a
// regression check tests. A separate, untimed pass fills known values on
// every rank and checks every element of the sum exactly (bf16 beyond 7
// ranks: within its roundings), counting wrong elements over all ranks. The sums run through
// comm/all_reducer.h with the chosen algorithm (mpi, shm, hier), so the
// algorithms compare in one table format.
//
// Every rank calls run_allreduce_sweep() with the same options; rank 0 prints
// the table. Nothing here includes <mpi.h>: only the Communicator is used.
//
// Thread-safety: call from the thread that owns the communicator.
#ifndef TRAINSCOPE_SUITES_ALLREDUCE_BENCH_H_
#define TRAINSCOPE_SUITES_ALLREDUCE_BENCH_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "comm/all_reducer.h"
#include "comm/communicator.h"
#include "results/records.h"

namespace trainscope::suites {

struct AllReduceOptions {
  int64_t min_bytes = 8;
  int64_t max_bytes = 256ll << 20;
  int factor = 2;  // each size is the previous one times this
  int iters = 20;  // timed calls per size
  int warmup = 5;  // untimed calls per size before the timed loop
  options::AllReduceAlgorithm algorithm = options::AllReduceAlgorithm::kMpi;
  options::CommDtype dtype = options::CommDtype::kFp32;  // what travels (--comm-dtype)
  // After the sweep, every rank memcpy's the largest size at once: the
  // memory bandwidth a shared-memory all-reduce is bounded by, printed
  // beside the largest size's busbw.
  bool copy_probe = true;
};

// Throws trainscope::Error naming the flag for options that make no sense.
void validate(const AllReduceOptions& options);

// Message sizes in bytes: min, min*factor, ... up to max, each rounded down
// to whole elements of the dtype (at least one).
std::vector<int64_t> sweep_sizes(const AllReduceOptions& options);

// busbw for an all-reduce over `ranks` ranks (equal to algbw when ranks <= 1).
double bus_bandwidth(double algbw, int ranks);

// "tcp", "shm" or "auto" from the btl setting mpirun passed, "local" for the
// one-process communicator; links from btl_tcp_links ("" if unset).
std::string transport_label(const comm::Communicator& comm);
std::string links_label();

// Runs the sweep on every rank; returns the rows (identical on every rank).
// Rank 0 prints the nccl-tests style table to `out` when it is not null.
std::vector<results::AllReduceRow> run_allreduce_sweep(comm::Communicator& comm,
                                                       const AllReduceOptions& options,
                                                       std::FILE* out);

// The table's text pieces, for printing and tests.
std::string format_sweep_header(const comm::Communicator& comm, const AllReduceOptions& options);
std::string format_sweep_row(const results::AllReduceRow& row);
// The two column-header lines (names, then units), each after its `lead`:
// "#" for the sweep's own table; a table whose rows print columns of their
// own before format_sweep_row's passes '#' and those columns' headers, each
// followed by a space (`cluster check`'s host pairs).
std::string format_sweep_columns(std::string_view lead_names, std::string_view lead_units);
std::string format_sweep_footer(const std::vector<results::AllReduceRow>& rows);
// The copy probe's lines: its GB/s per rank and the largest row's busbw as a
// share of it.
std::string format_copy_probe(const results::AllReduceRow& largest, double copy_gbps, int ranks);

// Median over `reps` of every rank copying `bytes` at once (memcpy between
// two buffers of its own, profiler/copy_probe.h), the slowest rank's time of
// each: GB/s per rank.
double copy_probe_gbps(comm::Communicator& comm, int64_t bytes, int reps);

}  // namespace trainscope::suites

#endif  // TRAINSCOPE_SUITES_ALLREDUCE_BENCH_H_
