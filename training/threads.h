// How many compute threads a rank uses when --threads does not say.
//
// Thread-safety: reads the environment and this process's affinity.
#ifndef TRAINSCOPE_TRAINING_THREADS_H_
#define TRAINSCOPE_TRAINING_THREADS_H_

namespace trainscope::training {

// Threads per rank when not given: the cores this process may run on,
// divided by the ranks on this host, at least 1.
int default_threads_per_rank();
// That rule for a rank that may use `cores` cores among `local_ranks` ranks
// on a host of `hardware_threads`: its share, or fewer if bound to fewer.
int threads_per_rank(int cores, int local_ranks, int hardware_threads);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_THREADS_H_
