// What a suite's report says about how its cases all-reduced: the algorithm
// (trainscope's --allreduce, and Open MPI's algorithm under "mpi"; results/
// allreduce_algorithms.h), ZeRO-1 and what the gradients travelled as
// (--comm-dtype).
//  * case_reduction: a case's choice, from its recorded configuration (the
//    suites write these keys only when not the default, so cases recorded
//    before they existed read as mpi, Open MPI's choice, no ZeRO);
//  * algorithm_busbw: for sweeps of several algorithms, each one's busbw at
//    the largest size it swept against Open MPI's default with otherwise the
//    same settings;
//  * zero_memory: each ZeRO-1 case's parameters, gradients and optimizer
//    state per rank beside the same case without ZeRO.
// A suite that uses only the defaults has none of these, and its report is
// what it was before they existed.
//
// Thread-safety: pure functions over plain values.
#ifndef TRAINSCOPE_REPORT_ALGORITHMS_H_
#define TRAINSCOPE_REPORT_ALGORITHMS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/suite_data.h"

namespace trainscope::report {

struct CaseReduction {
  std::string algorithm = "mpi";
  int mpi_algorithm = 0;
  int zero = 0;
  std::string comm_dtype = "fp32";
  bool is_default() const;
  // "mpi", "mpi alg 4 (ring)", "shm", "hier"; ", ZeRO-1" added for ZeRO,
  // ", bf16" for gradients sent as bf16.
  std::string label() const;
};
CaseReduction case_reduction(const analysis::CaseData& c);

// Whether any case of the suite all-reduced otherwise than by default, used
// ZeRO-1 or sent bf16 (then case tables show each case's CaseReduction::label).
bool suite_varies_reduction(const analysis::SuiteData& suite);

// One sweep case's bus bandwidth at the largest size it swept.
struct AlgorithmBusbw {
  std::string case_name;
  std::string label;  // the algorithm's (results::allreduce_algorithm_label)
  int64_t size_bytes = 0;
  double busbw_gbps = 0;      // median over its repetitions that ended ok; NaN: none
  std::string baseline_case;  // Open MPI's default, other settings alike; "": none
  double ratio = 0;           // busbw / the baseline's at the same size; NaN: no baseline
};
// Every sweep case of the suite, in suite order, when the sweeps use more
// than one algorithm; empty otherwise.
std::vector<AlgorithmBusbw> algorithm_busbw(const analysis::SuiteData& suite);

// Per-rank tracked peaks (the largest rank's, first usable repetition),
// bytes; -1 unknown.
struct RankMemory {
  int64_t parameters = -1;
  int64_t gradients = -1;
  int64_t optimizer_state = -1;
};
struct ZeroMemory {
  std::string case_name;  // the ZeRO-1 case
  int ranks = 1;
  RankMemory zero;
  std::string peer_case;  // the same case without ZeRO; "" when the suite has none
  RankMemory peer;
  // The whole optimizer state: what each rank of the peer holds; -1 without
  // a peer (the sum over this case's own ranks would only check its mean
  // against itself).
  int64_t optimizer_total = -1;
  std::string total_from;
  // "optimizer state per rank = X (total / N = Y)", then where the total
  // came from; without a peer, the per-rank figure alone and why.
  std::string sentence() const;
};
// The suite's usable ZeRO-1 train cases, in suite order.
std::vector<ZeroMemory> zero_memory(const analysis::SuiteData& suite);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_ALGORITHMS_H_
