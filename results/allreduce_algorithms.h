// The all-reduce algorithms a run can use, declared once for the suites (the
// `allreduce` and `mpi_algorithm` axes), the sweep rows (AllReduceRow) and
// the report (series and table labels).
//
// Two choices are recorded separately:
//  * the algorithm trainscope runs (`--allreduce`): "mpi" (MPI_Allreduce,
//    Open MPI picks or is told how), "shm" (an MPI-3 shared-memory
//    all-reduce among the ranks of one host), "hier" (shm inside each host,
//    MPI between hosts);
//  * for "mpi", the Open MPI `coll_tuned` algorithm forced with
//    `--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm
//    N` (an mpirun setting, not a trainscope flag); 0 leaves Open MPI's own
//    decision, which is the baseline the others are compared with.
//
// Thread-safety: constants and pure functions.
#ifndef TRAINSCOPE_RESULTS_ALLREDUCE_ALGORITHMS_H_
#define TRAINSCOPE_RESULTS_ALLREDUCE_ALGORITHMS_H_

#include <array>
#include <string>
#include <string_view>

#include "comm/all_reducer.h"

namespace trainscope::results {

// The values of `--allreduce`, declared with the algorithms themselves
// (comm/all_reducer.h, header only here); the first is the default.
inline constexpr const auto& kAllReduceAlgorithms = EnumNames<options::AllReduceAlgorithm>::names;
inline constexpr std::string_view kDefaultAllReduceAlgorithm = kAllReduceAlgorithms[0];

// Open MPI 4.1's coll_tuned_allreduce_algorithm values, by number (the index).
inline constexpr std::array<std::string_view, 7> kOpenMpiAllReduceAlgorithms = {
    "default", "basic linear",   "nonoverlapping", "recursive doubling",
    "ring",    "segmented ring", "rabenseifner"};
inline constexpr int kMaxOpenMpiAllReduceAlgorithm =
    static_cast<int>(kOpenMpiAllReduceAlgorithms.size()) - 1;

// Whether `name` is one of kAllReduceAlgorithms.
bool is_allreduce_algorithm(std::string_view name);

// "0 default, 1 basic linear, ..., 6 rabenseifner": for messages and docs.
std::string open_mpi_algorithm_list();
// Why `n` is not an Open MPI all-reduce algorithm; "" when it is.
std::string open_mpi_algorithm_problem(int64_t n);

// How reports name an algorithm: "mpi", "mpi alg 4 (ring)", "shm", "hier".
// An mpi_algorithm out of range is shown by its number alone.
std::string allreduce_algorithm_label(std::string_view algorithm, int mpi_algorithm);

}  // namespace trainscope::results

#endif  // TRAINSCOPE_RESULTS_ALLREDUCE_ALGORITHMS_H_
