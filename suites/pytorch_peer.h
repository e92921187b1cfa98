// The PyTorch peer of a suite case (engine = "pytorch"): the same training run
// as the trainscope case of the same settings, done by PyTorch's
// DistributedDataParallel (bench/pytorch/ddp_train.py), so the suites measure
// the framework users would pick instead, side by side, from the same weights
// and data. The case's job is two commands: `trainscope train --export-run`
// (one process: the step-0 weights, every global batch, the learning rates)
// before the job, then the peer under the same mpirun, placement and threads
// as a trainscope case, writing a trainscope run summary (planned with the
// case's job, suites/launch_plan.cpp).
//
// Thread-safety: the interpreter probe runs once (a function-local static).
#ifndef TRAINSCOPE_SUITES_PYTORCH_PEER_H_
#define TRAINSCOPE_SUITES_PYTORCH_PEER_H_

#include <filesystem>
#include <string>

#include "suites/suite_case.h"

namespace trainscope::suites {

// The Python that imports torch: $TRAINSCOPE_PYTHON when set (that one or
// none: a variable naming one that cannot is never replaced by another),
// else Debian's /usr/bin/python3 (python3-torch installs there) or python3 on
// the PATH; "" when none does, and pytorch_problem() says why.
const std::string& pytorch_python();
const std::string& pytorch_problem();  // "" when pytorch_python() is one

// bench/pytorch/ddp_train.py in the source tree this binary was built from.
std::filesystem::path pytorch_peer_script();

// Why a pytorch case cannot run ("" when it can): PyTorch absent, or a
// setting the peer has no counterpart for (duplicated data, contiguous
// shards, ZeRO-1, bf16 GEMMs, LoRA, trainscope's own all-reduce algorithms
// and Open MPI transports, validation, extra trainscope flags), or bf16
// gradients where this PyTorch's gloo cannot all-reduce bf16.
std::string pytorch_skip_reason(const SuiteCase& c);

}  // namespace trainscope::suites

#endif  // TRAINSCOPE_SUITES_PYTORCH_PEER_H_
