// One training step as SimGrid replays it: what each rank computes (as
// measured durations, not work), the gradient all-reduces with their bytes in
// bucket order, when backward makes each bucket ready, and how they are
// reduced. trainscope writes it (simgrid/simulation.h) and the SMPI program
// that replays it (simgrid/smpi_step.cpp, built with smpicxx) reads it, so
// this file uses the standard library only: it is compiled by both.
//
// The file is text, one `key value...` per line, '#' starts a comment:
//
//   forward_s 0.031          one rank's forward, seconds
//   backward_s 0.062
//   other_s 0.012            data and optimizer
//   buckets 67108864 41943040   bytes of each all-reduce, in reduction order
//   ready 0.6 1.0            optional: fraction of backward done when each
//                            bucket is ready (default: the bytes of it and
//                            the buckets before it over all, as backward
//                            finalises the arena at an even pace)
//   overlap 1                buckets reduced while backward runs (0: after it)
//   collective ring          ring: reduce-scatter + all-gather around the
//                            hosts, on SimGrid's own messages (overlap needs
//                            it); mpi: MPI_Allreduce, the algorithm SMPI is
//                            told with --cfg=smpi/allreduce
//   steps 12
//   compute_samples 0.101 0.104 ...   optional: one rank's compute in each
//                            measured step; each rank's step k draws one (a
//                            fixed hash of rank and step) and scales its
//                            forward, backward and other by it over their
//                            mean, so N ranks wait for the slowest as real
//                            ones do
//
// Thread-safety: plain values and pure functions.
#ifndef TRAINSCOPE_SIMGRID_STEP_PROFILE_H_
#define TRAINSCOPE_SIMGRID_STEP_PROFILE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace trainscope::simgrid {

enum class Collective { kRing, kMpi };

struct StepProfile {
  double forward_s = 0;
  double backward_s = 0;
  double other_s = 0;
  std::vector<int64_t> bucket_bytes;  // in reduction order
  std::vector<double> ready;          // empty: (i+1)/buckets
  bool overlap = false;
  Collective collective = Collective::kRing;
  int steps = 1;
  std::vector<double> compute_samples;
};

// The profile as the file holds it (the keys above, in that order).
std::string format_step_profile(const StepProfile& profile);

// Parses a profile file's text. Throws std::runtime_error naming `source`,
// the line and what is wrong ("profile.txt:3: backward_s: not a number: x").
StepProfile parse_step_profile(const std::string& text, const std::string& source);

// The engine's buckets (comm::bucket_ranges) in the order it reduces them:
// whole buckets of `bucket_bytes` cut from the end of the arena, the rest
// last; <= 0 or >= grad_bytes: one.
std::vector<int64_t> split_into_buckets(int64_t grad_bytes, int64_t bucket_bytes);

// The fraction of backward after which bucket i is ready (see `ready`).
double ready_fraction(const StepProfile& profile, std::size_t i);

// Rank `rank`'s factor on its compute in step `step`: a draw from the
// samples over their mean, 1 without samples. Deterministic.
double compute_factor(const StepProfile& profile, int rank, int step);

}  // namespace trainscope::simgrid

#endif  // TRAINSCOPE_SIMGRID_STEP_PROFILE_H_
