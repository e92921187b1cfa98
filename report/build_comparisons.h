// The comparisons of two builds a results database holds (`trainscope
// compare`, the paired timed lane; `trainscope work`, the work lane;
// results/comparison_records.h) as report tables: per case its pairs, the
// sides' step-time medians, head/base with its 95% interval and the verdict;
// per case and phase the counted work of each side and the change.
//
// Thread-safety: reads the database it is given.
#ifndef TRAINSCOPE_REPORT_BUILD_COMPARISONS_H_
#define TRAINSCOPE_REPORT_BUILD_COMPARISONS_H_

#include <vector>

#include "report/table.h"
#include "results/results_db.h"

namespace trainscope::report {

// One table per comparison, latest first; none without comparisons.
std::vector<Table> build_comparison_tables(results::ResultsDb& db);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_BUILD_COMPARISONS_H_
