// Each case's achieved figures as a share of the machine's measured limits
// (results/machine_limits.h): a rank's model GFLOP/s against sgemm at its
// GEMM shapes and thread count, and the gradient sync's busbw against the
// all-reduce peak of its transport and world size; for one-thread ranks on
// one host, the ceiling their CPUs give together (the sgemm on as many CPUs
// at once, against one alone: cores_ceiling). A case without a limit
// of its key shows "-" for the share; a suite without limits says so in the
// note rather than holding the runs against a figure it does not have.
//
// Thread-safety: pure functions.
#ifndef TRAINSCOPE_REPORT_LIMITS_H_
#define TRAINSCOPE_REPORT_LIMITS_H_

#include <string>
#include <vector>

#include "analysis/suite_data.h"
#include "report/table.h"

namespace trainscope::report {

struct LimitShare {
  std::string case_name;
  double gflops = results::kNaN;  // a rank's model GFLOP/s (CaseFigures::rank_gflops)
  const results::MachineLimit* sgemm = nullptr;  // its limit; nullptr: none measured
  double gflops_share = results::kNaN;           // gflops / sgemm->value
  // Several ranks on one host: the same sgemm on as many CPUs at once, and
  // all of them together over one alone (ranks x at once / alone): what
  // data parallelism over these CPUs can reach on the GEMMs at most.
  const results::MachineLimit* sgemm_at_once = nullptr;
  double cores_ceiling = results::kNaN;
  double busbw = results::kNaN;  // gradient sync busbw GB/s (CaseFigures::grad_busbw_gbps)
  const results::MachineLimit* allreduce = nullptr;
  double busbw_share = results::kNaN;
};

// One per train case with a usable run; pointers into suite.limits.
std::vector<LimitShare> limit_shares(const analysis::SuiteData& suite);

// The shares as a table; its note names each limit used and who measured
// it. No rows when the suite has no limits at all.
Table limits_table(const analysis::SuiteData& suite);
// When the suite has train cases but no limits: the sentence that says so and
// how to get them; else "".
std::string no_limits_note(const analysis::SuiteData& suite);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_LIMITS_H_
