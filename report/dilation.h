// Time-dilated virtual clusters in reports: a case whose virtual hosts ran
// at a CPU share F of a core behind links of F x the rate (suite key
// cpu_share, docs/CLUSTERS.md) stands, to first order, for full-speed hosts
// with time stretched by 1/F. Its times are multiplied by F (and its link's
// bandwidth divided by F) before they are set beside one-host figures or a
// prediction, and the report marks it "dilated x1/F".
//
// The emulation is checked, not assumed: a dilated case beside the same case
// on hosts of a whole core each (DilationCheck) should give the same step
// after scaling; where they differ the check says by how much and in which
// part of the step (compute, or the all-reduce backward did not hide).
//
// Thread-safety: pure functions.
#ifndef TRAINSCOPE_REPORT_DILATION_H_
#define TRAINSCOPE_REPORT_DILATION_H_

#include <string>
#include <vector>

#include "analysis/suite_data.h"
#include "report/table.h"

namespace trainscope::report {

// The CPU share F the runner recorded for the case (runs.config
// "cpu_share"); 1 when its hosts were not dilated.
double dilation_share(const results::RunCase& rc);
// Not dilated: a case that may stand for one real machine (a baseline, a
// reference, a one-machine case).
inline bool full_speed(const results::RunCase& rc) { return dilation_share(rc) >= 1; }

// "dilated x4" for F = 0.25; "" for F = 1.
std::string dilation_label(double share);

// A dilated case beside the same case on undilated hosts.
struct DilationCheck {
  std::string dilated_case, real_case;
  bool alone = false;  // one host under the quota (no cluster, no MPI, no links)
  double share = 1;
  double dilated_step_s = 0;  // median step x F
  double real_step_s = 0;
  double dilated_compute_s = 0, real_compute_s = 0;  // a rank's compute (mean over ranks) x F
  double dilated_exposed_s = 0, real_exposed_s = 0;  // all-reduce not hidden by backward x F
  // Where either was measured on a loaded machine (METRICS.md, machine
  // load): the first such run's words; "" when neither was.
  std::string loaded;
  double difference() const { return dilated_step_s / real_step_s - 1; }
};

std::vector<DilationCheck> dilation_checks(const analysis::SuiteData& suite);

// The checks as a report table (no rows when the suite has none), with the
// tolerance (10%) and, where a check misses it, why.
Table dilation_table(const analysis::SuiteData& suite);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_DILATION_H_
