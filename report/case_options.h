// What a case was configured to train with, typed: its recorded config
// (RunCase::config, written by suites/suite_case.cpp) read back through the
// option table (options/train_option_table.h) and the placement table
// (options/placement.h), the defaults where the config says nothing. The report asks a case's
// settings here and nowhere else.
//
// Thread-safety: pure functions.
#ifndef TRAINSCOPE_REPORT_CASE_OPTIONS_H_
#define TRAINSCOPE_REPORT_CASE_OPTIONS_H_

#include "analysis/suite_data.h"
#include "options/placement.h"
#include "options/train_option_table.h"

namespace trainscope::report {

struct CaseOptions {
  bool trains = true;  // false: an all-reduce sweep, whose config holds no training
  options::TrainOptions train;
  // Where it ran (batch_per_rank > 0: weak scaling; mpi_algorithm: Open
  // MPI's all-reduce algorithm forced, 0 its own choice).
  options::Placement placement;
  // Non-empty: the case replayed this case's compute as sleeps
  // (training/run/replay.h): its communication was measured, not its
  // compute, and it is never set beside measured cases as one of them.
  std::string replay_from;
};
CaseOptions case_options(const analysis::CaseData& c);

// What the first usable repetition's trainer recorded it ran with
// (RunSummary::options), typed; std::nullopt when no repetition is usable.
std::optional<options::TrainOptions> trainer_options(const analysis::CaseData& c);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_CASE_OPTIONS_H_
