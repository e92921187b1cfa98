// What a suite's report says about fine-tuning (`trainscope train
// --fine-tune full|lora`), for a suite whose cases differ in it:
//  * case_fine_tune: a case's choice, from its recorded configuration (the
//    suites write fine_tune and lora only for LoRA, so a case recorded before
//    they existed reads as full), else from the options its summary records;
//  * fine_tune_rows: each usable case's median step, tokens/s, gradient
//    bytes all-reduced per step, parameters and the share of them that
//    trains, and memory per rank by category: LoRA keeps gradients and
//    optimizer state for its adapters only, none for the frozen weights;
//  * rank_savings: each case on more than one rank against the one-rank case
//    configured alike (same fine-tune, model, data, global batch and steps):
//    the time for the steps on each and what the ranks save.
// The train and validation loss curves of the cases, overlaid, are
// loss_chart's (report/charts.h). A suite whose cases all train alike has
// none of these.
//
// Thread-safety: pure functions over plain values.
#ifndef TRAINSCOPE_REPORT_FINETUNE_H_
#define TRAINSCOPE_REPORT_FINETUNE_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/storage.h"
#include "analysis/suite_data.h"
#include "options/train_options.h"

namespace trainscope::report {

struct CaseFineTune {
  options::FineTune method = options::FineTune::kFull;
  options::LoraConfig lora;  // with kLora
  // "full"; "LoRA r8, alpha 16, q_proj,v_proj" (then dropout and the last N
  // layers when set).
  std::string label() const;
};
CaseFineTune case_fine_tune(const analysis::CaseData& c);

// Whether the suite's cases train in more than one way (two labels).
bool suite_varies_fine_tune(const analysis::SuiteData& suite);

// The memory the fine-tune tables show: where full and LoRA differ (the
// state of what trains) beside what they share.
inline constexpr std::array<kernels::MemoryCategory, 4> kFineTuneMemory = {
    kernels::MemoryCategory::kParameters, kernels::MemoryCategory::kGradients,
    kernels::MemoryCategory::kOptimizerState, kernels::MemoryCategory::kActivations};

struct FineTuneRow {
  std::string case_name;
  std::string label;  // CaseFineTune::label
  int ranks = 1;
  double step_median_s = 0;  // CaseFigures' (median over repetitions)
  double tokens_per_s = 0;
  // Rank 0's gradient all-reduce bytes per step, median over its measured
  // steps (first usable repetition); -1 unknown.
  int64_t comm_bytes_per_step = -1;
  int64_t parameters = -1;  // -1: not recorded (older summaries)
  int64_t trainable_parameters = -1;
  results::MemoryByCategory memory;  // peak_by_category of the first usable repetition
  double trainable_share() const;    // 0..1; NaN unknown
  // 4 for one all-reduce of fp32 gradients (one rank counts them too); NaN
  // unknown.
  double comm_bytes_per_trainable() const;
};
// The usable cases in suite order, when the suite varies the fine-tune;
// empty otherwise.
std::vector<FineTuneRow> fine_tune_rows(const analysis::SuiteData& suite);

struct RankSaving {
  std::string label;  // the fine-tune both cases train
  std::string one_rank_case;
  std::string case_name;  // the case on more ranks
  int ranks = 2;
  int64_t steps = 0;
  double one_rank_wall_s = 0;  // steps x median step
  double wall_s = 0;
  double speedup() const { return one_rank_wall_s / wall_s; }
  double time_saved() const { return 1 - wall_s / one_rank_wall_s; }  // share of the time
};
// Every usable multi-rank case that has a usable one-rank case configured
// alike but for the mode, ranks, threads and the reduction (which one rank
// does not do), in suite order, when the suite varies the fine-tune; empty
// otherwise.
std::vector<RankSaving> rank_savings(const analysis::SuiteData& suite);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_FINETUNE_H_
