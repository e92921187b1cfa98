#include "results/figures.h"

#include <cmath>

#include "profiler/stats.h"

namespace trainscope::results {

namespace {

using profiler::Phase;

double mean_over_ranks(const RunSummary& s, auto&& field) {
  if (s.ranks.empty()) return kNaN;
  double sum = 0;
  for (const auto& r : s.ranks) sum += field(r);
  return sum / static_cast<double>(s.ranks.size());
}

double exposed_comm_per_step(const RunSummary& s) {
  if (s.steps.empty()) return kNaN;
  double sum = 0;
  for (const auto& rank_steps : s.steps) {
    std::vector<double> exposed;
    for (const auto& step : measured_steps(s, rank_steps)) exposed.push_back(step.comm_exposed_s);
    sum += median_of(std::move(exposed));
  }
  return sum / static_cast<double>(s.steps.size());
}

int64_t ranks_vm_hwm(const RunSummary& s) {
  if (s.ranks.empty() || static_cast<int>(s.ranks.size()) != s.world_size) return kUnknown;
  int64_t sum = 0;
  for (const auto& r : s.ranks) {
    if (r.vm_hwm < 0) return kUnknown;
    sum += r.vm_hwm;
  }
  return sum;
}

void add_summary_figures(const RunSummary& s, RunFigures& f) {
  f.tokens_per_s = s.totals.tokens_per_s;
  f.step_median_s = s.totals.step_time_median_s;
  f.step_p95_s = s.totals.step_time_p95_s;
  f.step_mean_s = mean_over_ranks(s, [](const RankResult& r) { return r.step_time.mean; });
  for (size_t p = 0; p < f.phase_mean_s.values.size(); ++p) {
    f.phase_mean_s.values[p] =
        mean_over_ranks(s, [p](const RankResult& r) { return r.phases.values[p].mean; });
  }
  f.comm_share = f.step_mean_s > 0 ? f.phase_mean_s[Phase::kComm] / f.step_mean_s : kNaN;
  f.comm_exposed_s = exposed_comm_per_step(s);
  f.ranks_vm_hwm = ranks_vm_hwm(s);
}

}  // namespace

double median_of(std::vector<double> values) {
  std::erase_if(values, [](double v) { return std::isnan(v); });
  if (values.empty()) return kNaN;
  return profiler::summarize(values).median;
}

std::span<const StepRecord> measured_steps(const RunSummary& run,
                                           const std::vector<StepRecord>& steps) {
  const auto warmup = run.options.value("warmup_steps", int64_t{0});
  const size_t skip = warmup > 0 && static_cast<size_t>(warmup) < steps.size()
                          ? static_cast<size_t>(warmup) : 0;
  return std::span<const StepRecord>(steps).subspan(skip);
}

RunFigures run_figures(const RunSummary* summary, std::span<const AllReduceRow> sweep_rows) {
  RunFigures f;
  if (summary) add_summary_figures(*summary, f);
  if (!sweep_rows.empty()) {
    double busbw = 0;
    for (const auto& row : sweep_rows) {
      busbw += row.busbw_gbps;
      f.wrong_elements += row.wrong;
    }
    f.avg_busbw_gbps = busbw / static_cast<double>(sweep_rows.size());
  }
  return f;
}

}  // namespace trainscope::results
