// The CPUs this process may run on: what the runner plans ranks and pinned
// hosts over, and what a case's cores are checked against.
//
// Thread-safety: reads this process's affinity.
#ifndef TRAINSCOPE_SUITES_CPUS_H_
#define TRAINSCOPE_SUITES_CPUS_H_

#include <vector>

namespace trainscope::suites {

// The cores this process may run on (its affinity), at least 1.
int cores_available();
// Their numbers, ascending.
std::vector<int> allowed_cpus();

}  // namespace trainscope::suites

#endif  // TRAINSCOPE_SUITES_CPUS_H_
