// The questions the background documents ask of data-parallel training,
// answered from a suite's own measurements when it has the cases that answer
// them: one finding per question, each a sentence with the measured figures.
//  * data: how many bytes of the dataset a rank holds, duplicated vs sharded;
//  * loss: how far the data-parallel loss curves stray from one process's;
//  * reduction: per-tensor vs fused all-reduces, their calls and time, and
//    the model shape that makes the difference;
//  * links: what the TCP link count (btl_tcp_links) changes on the transport
//    measured, and why;
//  * machines: the time each added machine saves on the same data, per link,
//    beside the walkthrough's 38.7%;
//  * cores: each one-thread multi-rank case's speed over one one-thread
//    process beside what this machine's CPUs give together (limits.h).
// A suite without the cases for a question has no finding for it.
//
// Thread-safety: pure functions over plain values.
#ifndef TRAINSCOPE_REPORT_FINDINGS_H_
#define TRAINSCOPE_REPORT_FINDINGS_H_

#include <string>
#include <vector>

#include "analysis/intervals.h"
#include "analysis/suite_data.h"

namespace trainscope::report {

struct Finding {
  std::string id;        // "data", "loss", "reduction", "links", "machines", "cores"
  std::string question;  // e.g. "Duplicated vs sharded data"
  std::string answer;    // the measured figures and what they mean
};

std::vector<Finding> suite_findings(const analysis::SuiteData& suite);

// One case of a suite that ran on several (virtual) machines, beside the
// one-machine case it is measured against (machine_rows).
struct MachineRow {
  std::string case_name;
  int hosts = 1;
  int cores_per_host = 0;
  std::string link;       // profile or rate; "" on one host
  double link_gbps = 0;   // measured; NaN when not measured
  std::string reduction;  // or the mode of a one-process case
  std::string scaling;    // "weak" (batch_per_rank) or "strong" (global batch)
  int steps = 0;          // the case's steps
  double wall_s = 0;      // steps x the median step: wall time for those steps
  double tokens_per_s = 0;
  std::string baseline;   // the one-machine case (hosts > 1)
  double time_saved = 0;  // vs baseline on the same data; NaN without one
  double cpu_share = 1;   // < 1: dilated; times, tokens/s and the link are scaled back
  // Its 95% interval: 1 - 1/r over the bootstrap interval of the ratio r of
  // the two cases' median tokens/s over their repetitions (none with one).
  analysis::Interval time_saved_interval;
  std::string status;
};

// Whether two cases train the same weights (full, or the same LoRA adapters)
// of the same model on the same data at the same block size (their batches
// may differ).
bool same_workload(const analysis::CaseData& a, const analysis::CaseData& b);

// The one-host, one-rank case a multi-host case is measured against: same
// model, data and block, and the batch one machine would train, per rank for
// weak scaling (the case's batch_per_rank) or the global batch for strong;
// failing that any usable one-rank case of that workload. nullptr: none.
const analysis::CaseData* one_machine_case(const analysis::SuiteData& suite,
                                           const analysis::CaseData& c);
// The one-host, one-rank case of c's workload at exactly this batch; nullptr
// when the suite has none.
const analysis::CaseData* one_machine_case_at(const analysis::SuiteData& suite,
                                              const analysis::CaseData& c, int batch);

// Every case of a suite with a case on more than one host (empty otherwise).
std::vector<MachineRow> machine_rows(const analysis::SuiteData& suite);

// The share of the time a run on `hosts` machines saves against one machine
// on the same data: 1 - tokens/s(1) / tokens/s(N).
double time_saved(double one_machine_tokens_per_s, double tokens_per_s);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_FINDINGS_H_
