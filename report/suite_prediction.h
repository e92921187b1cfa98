// The prediction a report makes for a suite (analysis/prediction.h applied to
// its measurements): what N hosts would do on each link, and, for the cases
// that ran on several (virtual) hosts, the prediction beside what was
// measured.
//
// Where the figures come from:
//  * compute: the suite's one-process case (the comparison baseline when it
//    runs one rank): forward, backward, data + optimizer per step;
//  * gradient bytes: what a data-parallel case of the same workload
//    all-reduced per step, else the parameter arena's bytes;
//  * links: each link a multi-host case measured: the bus bandwidth of a
//    real case's own gradient all-reduces where one reduced after backward
//    (the calls as training makes them, latency inside), else the link
//    probe's bandwidth and latency recorded with the run; then the named
//    profiles' nominal rates with the measured latency (none measured:
//    latency 0, and the report says the predictions are then bounds). The
//    validation rows use each case's own probe, so that a case's prediction
//    is not made from its own all-reduces;
//  * bucket: the overlap case's bucket_mb, if the suite has one.
//
// Thread-safety: pure functions over plain values.
#ifndef TRAINSCOPE_REPORT_SUITE_PREDICTION_H_
#define TRAINSCOPE_REPORT_SUITE_PREDICTION_H_

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "analysis/prediction.h"
#include "analysis/intervals.h"
#include "analysis/suite_data.h"

namespace trainscope::report {

struct PredictedLink {
  analysis::LinkModel model;
  bool measured = false;
  std::string source;  // where bandwidth and latency come from, for the report
};

// A multi-host case: its measured median step beside the prediction from its
// one-machine case and its link's measurement.
struct ValidationRow {
  std::string case_name;
  std::string link;
  int hosts = 1;
  int cores_per_host = 0;  // 0: not pinned
  bool overlap = false;
  analysis::Scaling scaling = analysis::Scaling::kWeak;
  double cpu_share = 1;  // < 1: dilated (report/dilation.h); measured times are x this
  double measured_step_s = 0;
  // The lowest and highest of the repetitions' median steps (x cpu_share),
  // NaN with one repetition: the spread the measured point carries.
  double measured_min_s = NAN, measured_max_s = NAN;
  int repetitions = 0;  // usable ones
  bool loaded = false;  // measured on a loaded machine (it or its one-machine case)
  double predicted_step_s = 0;
  double measured_speedup = 0;  // tokens/s over the one-machine case's
  // Its 95% interval: bootstrap of the ratio of the two cases' median tokens/s
  // over their repetitions (none with one repetition).
  analysis::Interval measured_speedup_interval;
  double predicted_speedup = 0;
  // The one-machine case whose measured compute the prediction starts from:
  // the compute case, or for strong scaling the one at the per-rank batch.
  std::string compute_from;
  double error() const { return predicted_step_s / measured_step_s - 1; }
};

struct SuitePrediction {
  std::string compute_case;
  std::string grad_source;
  analysis::StepModel step;
  std::vector<PredictedLink> links;
  std::vector<ValidationRow> validation;
  std::string latency_note;  // non-empty when the latency was not measured
};

// std::nullopt when the suite has no usable one-process training case with
// forward and backward times, or no gradient size to reduce.
std::optional<SuitePrediction> suite_prediction(const analysis::SuiteData& suite);

// The StepModel of a one-process case (std::nullopt without usable phase
// times); grad bytes from `suite` as described above.
std::optional<analysis::StepModel> step_model(const analysis::SuiteData& suite,
                                              const analysis::CaseData& one,
                                              std::string* grad_source);

// Strong scaling's step on `hosts` hosts from `at`, a one-host case measured
// at the batch each rank then has (a smaller batch runs its GEMMs less
// efficiently than a share of a larger one): at's compute, the all-reduce
// over `link` in buckets of `bucket_bytes`. std::nullopt when `at` has no
// step model. Its speedup is against at's own tokens/s.
std::optional<analysis::Prediction> predict_at_rank_batch(const analysis::SuiteData& suite,
                                                          const analysis::CaseData& at,
                                                          double bucket_bytes,
                                                          const analysis::LinkModel& link,
                                                          int hosts, bool overlap);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_SUITE_PREDICTION_H_
