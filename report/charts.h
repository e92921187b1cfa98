// The charts of a suite report, as gnuplot scripts and data files
// (ChartSpec, see report/gnuplot.h). Each builder returns std::nullopt (or an
// empty list) when the suite has no data for that chart, so a report only
// shows charts that say something:
//  * phase_chart: mean step time per case, stacked by phase;
//  * rank_times_chart: compute and wait per step for every rank of every
//    multi-rank case, so a straggler stands out (its compute bar is long, the
//    others' wait bars are);
//  * memory_per_rank_chart: tracked peak bytes by category for every rank of
//    every case (first usable repetition);
//  * memory_totals_chart: totals across ranks per case: tracked peak, VmHWM
//    and peak PSS (poller, else the ranks' own reading);
//  * memory_over_time_charts: RSS and PSS of every polled process over time,
//    one chart per case;
//  * loss_chart: train (rank 0) and validation loss of the cases overlaid;
//  * bucket_chart: comm time per step vs bucket size, one line per reduction;
//  * links_chart: bandwidth vs number of TCP links;
//  * busbw_chart: all-reduce bus bandwidth vs message size, one series per
//    case, named by its all-reduce algorithm in a suite that compares them;
//  * amdahl_chart: measured speedups, the fitted Amdahl curve and ideal.
//
// Labels (case names, commands) go through gnuplot_quote and the preamble
// turns enhanced text off, so no label is interpreted as markup.
//
// Thread-safety: pure functions over plain values.
#ifndef TRAINSCOPE_REPORT_CHARTS_H_
#define TRAINSCOPE_REPORT_CHARTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/comparison.h"
#include "report/gnuplot.h"
#include "analysis/suite_data.h"

namespace trainscope::report {

std::optional<ChartSpec> phase_chart(const analysis::SuiteData& suite);
std::optional<ChartSpec> rank_times_chart(const analysis::SuiteData& suite);
std::optional<ChartSpec> memory_per_rank_chart(const analysis::SuiteData& suite);
std::optional<ChartSpec> memory_totals_chart(const analysis::SuiteData& suite);
std::vector<ChartSpec> memory_over_time_charts(const analysis::SuiteData& suite);
std::optional<ChartSpec> loss_chart(const analysis::SuiteData& suite);
std::optional<ChartSpec> bucket_chart(const analysis::SuiteData& suite);
std::optional<ChartSpec> links_chart(const analysis::SuiteData& suite);
std::optional<ChartSpec> busbw_chart(const analysis::SuiteData& suite);
std::optional<ChartSpec> amdahl_chart(const analysis::SuiteData& suite,
                                      const Comparison& comparison);

// All of the above for one suite, in report order.
std::vector<ChartSpec> suite_charts(const analysis::SuiteData& suite, const Comparison& comparison);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_CHARTS_H_
