// Why a well-formed suite case cannot run on this machine: what it asks of
// the trainer, of the PyTorch peer, and of the machine. Above the case
// (suites/suite_case.h) and the peer (suites/pytorch_peer.h), which it asks;
// the parser records the answer as the case's skip_reason.
//
// Thread-safety: pure functions, but for the PyTorch probe (run once).
#ifndef TRAINSCOPE_SUITES_CASE_SKIPS_H_
#define TRAINSCOPE_SUITES_CASE_SKIPS_H_

#include <string>

#include "suites/suite_case.h"

namespace trainscope::suites {

// Why the case cannot run here although well-formed ("" when it can): what
// it asks of the trainer (naive on 2 ranks, ZeRO-1 without fused, bf16 on a
// CPU without bf16 instructions, LoRA on more layers than the model has),
// then where and over what it runs (hosts whose cores this machine lacks,
// shm across hosts...).
std::string skip_reason(const SuiteCase& c);

}  // namespace trainscope::suites

#endif  // TRAINSCOPE_SUITES_CASE_SKIPS_H_
