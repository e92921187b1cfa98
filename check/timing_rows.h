// The timing rows of a regression check (check/regression_check.h):
// step time, tokens/s and busbw per message size, each compared on one
// figure per usable repetition and never on the steps or calls inside one
// run (a process's steps share its state: they are not independent samples,
// and a test over them is pseudoreplication).
//
// Each row says the change with its Hodges-Lehmann 95% interval, and the
// smallest slowdown the comparison could detect at the repetitions' noise
// (minimum detectable effect at 80% power, analysis/intervals.h). A
// row is INCONCLUSIVE, not "ok", when the sizes cannot reach p < alpha at
// all or when that detectable slowdown exceeds the threshold; the note says
// how many repetitions a side would do.
//
// Thread-safety: pure functions.
#ifndef TRAINSCOPE_CHECK_TIMING_ROWS_H_
#define TRAINSCOPE_CHECK_TIMING_ROWS_H_

#include <cstdint>
#include <vector>

#include "check/baseline.h"
#include "check/check_row.h"

namespace trainscope::check {

// Step time median (tested) and tokens/s (shown with its interval, no
// verdict: the step time row decides) of a training case.
void compare_step_timings(const CaseRecord& b, const CaseRecord& c, const CheckOptions& o,
                          std::vector<CheckRow>& rows);

// busbw per message size of an all-reduce sweep.
void compare_sweep_busbw(const CaseRecord& b, const CaseRecord& c, const CheckOptions& o,
                         std::vector<CheckRow>& rows);

// The fewest repetitions n (n vs n) whose Mann-Whitney test can reach
// p < alpha at all (4 at 0.05).
int64_t repetitions_to_reach(double alpha);

}  // namespace trainscope::check

#endif  // TRAINSCOPE_CHECK_TIMING_ROWS_H_
