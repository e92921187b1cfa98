// The report's answers to the background documents' questions, for one
// suite, rendered once as tables and sentences and written out as HTML or
// Markdown: the findings (report/findings.h), the machines table (wall time
// for the case's steps and time saved per added machine), busbw per
// all-reduce algorithm and memory per rank with ZeRO-1 (report/
// algorithms.h), full fine-tuning vs LoRA and what the second rank saves for
// each (report/finetune.h), and the prediction for N hosts (report/
// suite_prediction.h) with the chart of its curves and the measured points.
//
// Thread-safety: pure functions over plain values.
#ifndef TRAINSCOPE_REPORT_ANSWERS_H_
#define TRAINSCOPE_REPORT_ANSWERS_H_

#include <optional>
#include <string>

#include "report/gnuplot.h"
#include "analysis/suite_data.h"

namespace trainscope::report {

std::string answers_html(const analysis::SuiteData& suite);
std::string answers_markdown(const analysis::SuiteData& suite);

// Predicted speedup against hosts (1..64, weak scaling) for each link, with
// and without overlap, the measured multi-host points on it; std::nullopt
// when the suite has nothing to predict from.
std::optional<ChartSpec> prediction_chart(const analysis::SuiteData& suite);

// The hosts counts the prediction tables and chart show.
inline constexpr int kMaxPredictedHosts = 64;

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_ANSWERS_H_
