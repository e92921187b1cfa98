#include "training/threads.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace trainscope::training {

int default_threads_per_rank() {
  cpu_set_t set;
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cores = CPU_COUNT(&set);
  int local_ranks = 1;
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"}) {
    if (const char* v = std::getenv(var)) {
      local_ranks = std::max(1, std::atoi(v));
      break;
    }
  }
  return threads_per_rank(cores, local_ranks,
                          static_cast<int>(std::thread::hardware_concurrency()));
}

int threads_per_rank(int cores, int local_ranks, int hardware_threads) {
  // Bound to fewer cores than its share (mpirun --bind-to core): use what it has.
  return std::max(1, std::min(cores, hardware_threads / std::max(1, local_ranks)));
}

}  // namespace trainscope::training
