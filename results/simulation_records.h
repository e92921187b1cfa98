// Step times a simulator gave for a suite's step on N hosts: SimGrid's SMPI
// replaying the suite's measured step profile (`trainscope simgrid --save`,
// simgrid/simulation.h), stored beside the suite so the report can set them
// beside the prediction, the replayed cases and the real ones without
// running a simulator itself.
//
// Stored in the results database's simulations table, one row per link,
// host count and reduction (suite_id: the suite whose step was replayed). A
// database made before the table existed has none.
//
// Thread-safety: plain values.
#ifndef TRAINSCOPE_RESULTS_SIMULATION_RECORDS_H_
#define TRAINSCOPE_RESULTS_SIMULATION_RECORDS_H_

#include <string>

#include "results/fields.h"

namespace trainscope::results {

struct SimulatedStep {
  std::string simulator;     // e.g. "SimGrid SMPI, lr"
  std::string link;          // as the suite's prediction names it (gige, 2.5gbe...)
  double bandwidth_Bps = 0;  // the platform's links, each direction
  double latency_s = 0;      // host to host
  int hosts = 0;
  bool overlap = false;  // buckets reduced during backward
  std::string scaling = "weak";
  int steps = 0;                  // simulated; the figures are their medians
  double step_s = 0;              // rank 0's step
  double comm_s = 0;              // its all-reduces, hidden or not
  double predicted_step_s = NAN;  // the prediction's at the same point, as it stood
  std::string compute_case;       // the one-host case whose step was replayed
  std::string simulated_at;       // ISO-8601 UTC
};
template <>
struct Fields<SimulatedStep> {
  static constexpr auto table = std::tuple{
      field("simulator", &SimulatedStep::simulator),
      field("link", &SimulatedStep::link),
      field("bandwidth_Bps", &SimulatedStep::bandwidth_Bps),
      field("latency_s", &SimulatedStep::latency_s),
      field("hosts", &SimulatedStep::hosts),
      field("overlap", &SimulatedStep::overlap),
      field("scaling", &SimulatedStep::scaling),
      field("steps", &SimulatedStep::steps),
      field("step_s", &SimulatedStep::step_s),
      field("comm_s", &SimulatedStep::comm_s),
      field("predicted_step_s", &SimulatedStep::predicted_step_s),
      field("compute_case", &SimulatedStep::compute_case),
      field("simulated_at", &SimulatedStep::simulated_at),
  };
};

}  // namespace trainscope::results

#endif  // TRAINSCOPE_RESULTS_SIMULATION_RECORDS_H_
