// trainscope against PyTorch (suites' engine = "pytorch"): each PyTorch case
// beside the trainscope case configured alike but for the engine, the ratio
// of their tokens/s (medians over repetitions) and whether their losses
// followed each other from the same weights and batches. The report's first
// table when a suite has such pairs (the built-in vs-pytorch suite).
//
// Thread-safety: pure functions over plain values.
#ifndef TRAINSCOPE_REPORT_ENGINES_H_
#define TRAINSCOPE_REPORT_ENGINES_H_

#include <string>
#include <vector>

#include "analysis/suite_data.h"
#include "report/table.h"

namespace trainscope::report {

// Relative loss difference under which two fp32 runs from the same weights
// and batches count as the same training (issue 27's target over 50 steps).
inline constexpr double kEngineLossTolerance = 1e-4;

// How two runs' losses compare, step by step (rank 0's, first usable
// repetition of each).
struct LossAgreement {
  int steps = 0;            // compared (the steps both recorded)
  double worst_rel = 0;     // largest |a - b| / |a|
  int worst_step = -1;      // where
  int first_over = -1;      // first step over kEngineLossTolerance; -1: none
  bool comparable = false;  // both have losses
};
LossAgreement compare_losses(const results::RunSummary& ours, const results::RunSummary& theirs);

struct EnginePair {
  const analysis::CaseData* trainscope = nullptr;
  const analysis::CaseData* pytorch = nullptr;
};
// The pairs, in the order of the PyTorch cases.
std::vector<EnginePair> engine_pairs(const analysis::SuiteData& suite);

// No rows when the suite has no pairs.
Table engine_pairs_table(const analysis::SuiteData& suite);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_ENGINES_H_
