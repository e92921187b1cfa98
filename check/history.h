// Results across commits: each case's step time and tokens/s per git
// revision, in the order the revisions were first measured, with 95%
// intervals from the repetitions and the change points of the series
// (analysis/change_point.h, Pettitt's rank test, binary
// segmentation), each naming the first revision after the change.
//
// The unit is the repetition: a revision's figure is the median over every
// usable repetition of every suite run at that revision, its interval the
// bootstrap of that median; the change points are found on the revisions'
// medians, one value per revision.
//
// Thread-safety: pure functions.
#ifndef TRAINSCOPE_CHECK_HISTORY_H_
#define TRAINSCOPE_CHECK_HISTORY_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/change_point.h"
#include "analysis/intervals.h"
#include "analysis/suite_data.h"

namespace trainscope::check {

struct HistoryPoint {
  std::string revision;
  int64_t first_suite_id = 0;
  int repetitions = 0;             // usable repetitions pooled at this revision
  analysis::Interval step_time_s;  // median and its bootstrap interval
  analysis::Interval tokens_per_s;
};

// A change of a case's step time: before `points[index]` and from it on.
struct HistoryChange {
  size_t index = 0;
  std::string first_revision;  // points[index].revision
  analysis::ChangePoint test;
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
std::vector<CaseHistory> build_history(const std::vector<analysis::SuiteData>& suites,
                                       double alpha = 0.05);

// Distinct git revisions among the suites.
size_t revision_count(const std::vector<analysis::SuiteData>& suites);

std::string history_text(const std::vector<CaseHistory>& history);
std::string history_markdown(const std::vector<CaseHistory>& history);

// What the text, Markdown and the report's HTML (report/history_page.h)
// share: the cases grouped by suite, a change in words, an interval in ms.
std::map<std::string, std::vector<const CaseHistory*>> by_suite(
    const std::vector<CaseHistory>& history);
std::string change_sentence(const CaseHistory& h, const HistoryChange& c);
std::string interval_ms(const analysis::Interval& iv);

}  // namespace trainscope::check

#endif  // TRAINSCOPE_CHECK_HISTORY_H_
