// The history across revisions as a report section: a table per suite and,
// with gnuplot, the trend chart with error bars and the change points marked
// (the history itself: check/history.h).
//
// Thread-safety: pure functions; history_html runs gnuplot.
#ifndef TRAINSCOPE_REPORT_HISTORY_PAGE_H_
#define TRAINSCOPE_REPORT_HISTORY_PAGE_H_

#include <optional>
#include <string>
#include <vector>

#include "check/history.h"
#include "report/gnuplot.h"

namespace trainscope::report {

std::string history_html(const std::vector<check::CaseHistory>& history,
                         const std::optional<std::string>& gnuplot);

// The trend chart of one suite's cases (step time per revision, error
// bars from the intervals, change points as vertical lines).
ChartSpec history_chart(const std::vector<const check::CaseHistory*>& cases);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_HISTORY_PAGE_H_
