#include "report/finetune.h"

#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/case_options.h"

namespace trainscope::report {
namespace {

using results::kNaN;

// Rank 0's gradient bytes per measured step (median); -1 without steps.
int64_t comm_bytes_per_step(const results::RunSummary& s) {
  const double bytes = results::median_step_figure(s, &results::StepRecord::comm_bytes);
  return std::isnan(bytes) ? -1 : static_cast<int64_t>(std::llround(bytes));
}

// Summaries written before the counts were recorded say 0.
int64_t known_count(int64_t n) { return n > 0 ? n : -1; }

// Settings one rank does not use (it reduces nothing) or that split the same
// cores among the ranks: a case on N ranks is measured against the one-rank
// case that differs from it in these only.
constexpr std::initializer_list<const char*> kRankSettings = {
    "mode", "ranks", "threads", "reduce", "bucket_mb", "allreduce", "mpi_algorithm", "zero"};

}  // namespace

std::string CaseFineTune::label() const {
  if (method != options::FineTune::kLora) return std::string(enum_name(method));
  std::vector<std::string_view> targets;
  for (options::LoraTarget t : lora.targets) targets.push_back(enum_name(t));
  std::string out =
      fmt::format("LoRA r{}, alpha {:g}, {}", lora.rank, lora.alpha, fmt::join(targets, ","));
  if (lora.dropout > 0) out += fmt::format(", dropout {:g}", lora.dropout);
  if (lora.layers > 0) out += fmt::format(", last {} layers", lora.layers);
  return out;
}

CaseFineTune case_fine_tune(const analysis::CaseData& c) {
  // The suite's record first (it records fine_tune under LoRA only); a case
  // that set it through extra_args, or whose config predates the key, by
  // what its trainer says.
  options::TrainOptions o = case_options(c).train;
  if (o.fine_tune != options::FineTune::kLora) {
    if (const auto trainer = trainer_options(c)) o = *trainer;
  }
  return {o.fine_tune, o.lora};
}

bool suite_varies_fine_tune(const analysis::SuiteData& suite) {
  std::set<std::string> labels;
  for (const auto& c : suite.cases) labels.insert(case_fine_tune(c).label());
  return labels.size() > 1;
}

double FineTuneRow::trainable_share() const {
  return parameters > 0 && trainable_parameters >= 0
             ? static_cast<double>(trainable_parameters) / static_cast<double>(parameters)
             : kNaN;
}

double FineTuneRow::comm_bytes_per_trainable() const {
  return comm_bytes_per_step >= 0 && trainable_parameters > 0
             ? static_cast<double>(comm_bytes_per_step) / static_cast<double>(trainable_parameters)
             : kNaN;
}

std::vector<FineTuneRow> fine_tune_rows(const analysis::SuiteData& suite) {
  if (!suite_varies_fine_tune(suite)) return {};
  std::vector<FineTuneRow> out;
  for (const auto& c : suite.cases) {
    const analysis::RunData* run = c.first_usable();
    if (!run) continue;
    const results::RunSummary& s = *run->summary;
    const analysis::CaseFigures f = analysis::case_figures(c);
    FineTuneRow row;
    row.case_name = c.name;
    row.label = case_fine_tune(c).label();
    row.ranks = f.world_size;
    row.step_median_s = f.step_median_s;
    row.tokens_per_s = f.tokens_per_s;
    row.comm_bytes_per_step = comm_bytes_per_step(s);
    row.parameters = known_count(s.parameters);
    row.trainable_parameters = known_count(s.trainable_parameters);
    row.memory = analysis::peak_by_category(s);
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<RankSaving> rank_savings(const analysis::SuiteData& suite) {
  if (!suite_varies_fine_tune(suite)) return {};
  std::vector<RankSaving> out;
  for (const auto& c : suite.cases) {
    if (c.run_case.world_size < 2 || !c.first_usable()) continue;
    for (const auto& one : suite.cases) {
      if (one.run_case.world_size != 1 || one.run_case.host_count > 1 || !one.first_usable() ||
          !analysis::alike_but(one, c, kRankSettings)) {
        continue;
      }
      RankSaving r;
      r.label = case_fine_tune(c).label();
      r.one_rank_case = one.name;
      r.case_name = c.name;
      r.ranks = c.run_case.world_size;
      // Alike, so the same steps on both.
      r.steps = case_options(c).train.steps;
      r.one_rank_wall_s = analysis::case_figures(one).step_median_s * static_cast<double>(r.steps);
      r.wall_s = analysis::case_figures(c).step_median_s * static_cast<double>(r.steps);
      out.push_back(std::move(r));
      break;
    }
  }
  return out;
}

}  // namespace trainscope::report
