#include "results/allreduce_algorithms.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace trainscope::results {

bool is_allreduce_algorithm(std::string_view name) {
  return std::find(kAllReduceAlgorithms.begin(), kAllReduceAlgorithms.end(), name) !=
         kAllReduceAlgorithms.end();
}

std::string open_mpi_algorithm_list() {
  std::vector<std::string> parts;
  for (size_t i = 0; i < kOpenMpiAllReduceAlgorithms.size(); ++i) {
    parts.push_back(fmt::format("{} {}", i, kOpenMpiAllReduceAlgorithms[i]));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string open_mpi_algorithm_problem(int64_t n) {
  if (n >= 0 && n <= kMaxOpenMpiAllReduceAlgorithm) return "";
  return fmt::format("unknown mpi_algorithm {} (Open MPI's coll_tuned_allreduce_algorithm: {})", n,
                     open_mpi_algorithm_list());
}

std::string allreduce_algorithm_label(std::string_view algorithm, int mpi_algorithm) {
  if (mpi_algorithm <= 0) return std::string(algorithm);
  if (mpi_algorithm > kMaxOpenMpiAllReduceAlgorithm) {
    return fmt::format("{} alg {}", algorithm, mpi_algorithm);
  }
  return fmt::format("{} alg {} ({})", algorithm, mpi_algorithm,
                     kOpenMpiAllReduceAlgorithms[static_cast<size_t>(mpi_algorithm)]);
}

}  // namespace trainscope::results
