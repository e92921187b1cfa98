// The N-host prediction beside its two independent checks, per link,
// reduction and host count, under weak and strong scaling: SimGrid's SMPI replaying the same
// measured step on a simulated switch (`trainscope simgrid --save`), the
// replayed cases (compute slept from a one-host run, communication real over
// the virtual cluster: training/run/replay.h) and the real cases (computing,
// at 2 hosts on this machine), each with its difference from the prediction,
// and the replay against the real case where both ran: the replay's own
// check. The prediction is the suite's (report/suite_prediction.h), made
// with each link as the suite measured it.
//
// Thread-safety: pure functions.
#ifndef TRAINSCOPE_REPORT_MODEL_CHECK_H_
#define TRAINSCOPE_REPORT_MODEL_CHECK_H_

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "analysis/suite_data.h"
#include "report/suite_prediction.h"
#include "report/table.h"

namespace trainscope::report {

struct ModelCheckRow {
  // Weak: a batch per rank, as one host's; strong: the global batch fixed,
  // each rank's compute that of one host at batch / N (the prediction then
  // starts from the one-host case measured at that batch, none without it).
  analysis::Scaling scaling = analysis::Scaling::kWeak;
  std::string link;
  bool overlap = false;
  int hosts = 0;
  double predicted_s = NAN;  // NaN: the prediction has no such link
  double simgrid_s = NAN;    // NaN: not simulated
  double replay_s = NAN;     // median step of the case replaying one host; NaN: none ran
  double real_s = NAN;       // of the real case; NaN: none ran
  // Of the case replaying the real one (each rank sleeping what its namesake
  // computed): the replay's own check, the same compute on both sides.
  double real_replayed_s = NAN;
  std::string replay_case, real_case, real_replayed_case;
  bool loaded = false;  // a case of the row was measured on a loaded machine
  // The replay's gradient all-reduce bus bandwidth over its link's measured
  // rate: whether this machine carried N hosts' traffic at the link's rate
  // (below kLinkShareFloor the replay measures the machine, not the link).
  double replay_link_share = NAN;
  // The share of this machine's CPUs the replay's ranks kept busy over their
  // steps (CaseFigures::host_cpu_busy): at kCpuBusyCeiling or above, the
  // communication was short of CPU, whatever the links could carry.
  double replay_cpu_busy = NAN;
  // The replay's replay_time_scale: its figures above are divided by it.
  double replay_time_scale = 1;
};

inline constexpr double kLinkShareFloor = 0.8;
inline constexpr double kCpuBusyCeiling = 0.9;

// Rows for every point that SimGrid simulated (weak scaling) or a replayed
// or real multi-host case ran, by scaling, link, reduction and hosts; empty
// when none did.
std::vector<ModelCheckRow> model_check_rows(const analysis::SuiteData& suite,
                                            const SuitePrediction& p);

// The table of the rows of one scaling, with where the models part and why;
// std::nullopt when there are none.
std::optional<Table> model_check_table(const analysis::SuiteData& suite, const SuitePrediction& p,
                                       analysis::Scaling scaling = analysis::Scaling::kWeak);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_MODEL_CHECK_H_
