// Results across commits: each case's step time and tokens/s per git
// revision, in the order the revisions were first measured, with 95%
// intervals from the repetitions and the change points of the series
// (report/analysis/change_point.h, Pettitt's rank test, binary
// segmentation), each naming the first revision after the change.
//
// The unit is the repetition: a revision's figure is the median over every
// usable repetition of every suite run at that revision, its interval the
// bootstrap of that median; the change points are found on the revisions'
// medians, one value per revision.
//
// Thread-safety: pure functions; history_html runs gnuplot.
#ifndef TRAINSCOPE_REPORT_HISTORY_H_
#define TRAINSCOPE_REPORT_HISTORY_H_

#include <optional>
#include <string>
#include <vector>

#include "report/analysis/change_point.h"
#include "report/analysis/intervals.h"
#include "report/gnuplot.h"
#include "report/suite_data.h"

namespace trainscope::report {

struct HistoryPoint {
  std::string revision;
  int64_t first_suite_id = 0;
  int repetitions = 0;   // usable repetitions pooled at this revision
  Interval step_time_s;  // median and its bootstrap interval
  Interval tokens_per_s;
};

// A change of a case's step time: before `points[index]` and from it on.
struct HistoryChange {
  size_t index = 0;
  std::string first_revision;  // points[index].revision
  ChangePoint test;
};

struct CaseHistory {
  std::string suite;
  std::string case_name;
  std::vector<HistoryPoint> points;  // by revision, in order of first measurement
  std::vector<HistoryChange> changes;
  // When the series is too short for the test to find any change at alpha:
  // says so, and how many revisions would do ("" otherwise).
  std::string too_short;
};

// Every case of every suite (by suite name), the revisions in the order of
// their first suite id (the order they were measured), whatever the order
// of `suites`.
std::vector<CaseHistory> build_history(const std::vector<SuiteData>& suites,
                                       double alpha = 0.05);

// Distinct git revisions among the suites.
size_t revision_count(const std::vector<SuiteData>& suites);

std::string history_text(const std::vector<CaseHistory>& history);
std::string history_markdown(const std::vector<CaseHistory>& history);
// A section with a table per suite and, with gnuplot, the trend chart with
// error bars and the change points marked.
std::string history_html(const std::vector<CaseHistory>& history,
                         const std::optional<std::string>& gnuplot);

// The trend chart of one suite's cases (step time per revision, error
// bars from the intervals, change points as vertical lines).
ChartSpec history_chart(const std::vector<const CaseHistory*>& cases);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_HISTORY_H_
