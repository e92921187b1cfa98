#include "results/figures.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

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

// Whether two ranks share a machine, and so its cores: the virtual hosts of
// one cluster have their own host names on one machine (RankResult::machine;
// the host name where a summary has none).
bool same_machine(const RankResult& a, const RankResult& b) {
  return !a.machine.empty() && !b.machine.empty() ? a.machine == b.machine : a.host == b.host;
}

// The cores the job's ranks on `rank`'s machine kept busy over their steps:
// each rank's CPU seconds over its wall seconds, summed. NaN when a rank
// there did not record its CPU time.
double busy_cores_on(const RunSummary& s, const RankResult& rank) {
  double busy = 0;
  for (const RankResult& r : s.ranks) {
    if (!same_machine(r, rank)) continue;
    if (!(r.steps_wall_s > 0) || std::isnan(r.cpu_s)) return kNaN;
    busy += r.cpu_s / r.steps_wall_s;
  }
  return busy;
}

// The job's threads on `rank`'s machine: its ranks there times their
// threads. A replay's ranks sleep their compute, so there they count as the
// cores their CPU time kept busy (rounded up), when every rank recorded it.
int64_t job_threads_on(const RunSummary& s, const RankResult& rank) {
  const auto ranks_here = std::count_if(s.ranks.begin(), s.ranks.end(),
                                        [&](const RankResult& r) { return same_machine(r, rank); });
  const int64_t threads = ranks_here * std::max(1, s.threads_per_rank);
  if (!s.options.is_object() || s.options.value("replay_compute", "").empty()) return threads;
  const double busy = busy_cores_on(s, rank);
  return std::isnan(busy) ? threads : static_cast<int64_t>(std::ceil(busy));
}

// Why a host was loaded at one moment, or "" when it was not (or unknown):
// the other processes' runnable threads and the job's own threads there
// (job_threads_on) outnumber the cores.
std::string loaded_host(const RunSummary& s, const RankResult& rank, const profiler::HostLoad& load,
                        const char* when) {
  if (load.cores <= 0 || load.other_runnable < 0) return "";
  const int64_t job_threads = job_threads_on(s, rank);
  if (load.other_runnable + job_threads <= load.cores) return "";
  return fmt::format(
      "{} at {}: {} runnable threads of other processes + {} of the job's > {} cores", rank.host,
      when, load.other_runnable, job_threads, load.cores);
}

RunLoad run_load(const RunSummary& s) {
  RunLoad out;
  for (const auto& r : s.ranks) {
    RunLoad rank{r.load_start.loadavg_1m, r.load_end.loadavg_1m, r.load_start.other_runnable,
                 r.load_end.other_runnable, loaded_host(s, r, r.load_start, "the start")};
    if (rank.loaded.empty()) rank.loaded = loaded_host(s, r, r.load_end, "the end");
    out = busier(out, rank);
  }
  return out;
}

// Median over the rank's measured steps of `figure`.
double median_over_steps(const RunSummary& s, const std::vector<StepRecord>& steps, auto&& figure) {
  std::vector<double> values;
  for (const auto& step : measured_steps(s, steps)) values.push_back(figure(step));
  return median_of(std::move(values));
}

// Fills waiting_for_others_s and transfer_s of `out` (ranks that recorded
// steps) from each measured step's least wait over the ranks.
void split_waits(const RunSummary& s, std::vector<RankTimes>& out) {
  std::vector<std::span<const StepRecord>> ranks;
  size_t steps = SIZE_MAX;
  for (const auto& t : out) {
    ranks.push_back(measured_steps(s, s.steps[t.rank]));
    steps = std::min(steps, ranks.back().size());
  }
  if (ranks.size() < 2 || steps == 0) return;
  std::vector<double> least(steps, INFINITY);
  for (const auto& r : ranks) {
    for (size_t i = 0; i < steps; ++i) least[i] = std::min(least[i], r[i].phases[Phase::kComm]);
  }
  const double transfer = median_of(least);
  for (size_t k = 0; k < out.size(); ++k) {
    std::vector<double> waiting(steps);
    for (size_t i = 0; i < steps; ++i) waiting[i] = ranks[k][i].phases[Phase::kComm] - least[i];
    out[k].waiting_for_others_s = median_of(std::move(waiting));
    out[k].transfer_s = transfer;
  }
}

std::vector<RankTimes> rank_times(const RunSummary& s) {
  std::vector<RankTimes> out;
  for (size_t r = 0; r < s.steps.size(); ++r) {
    if (s.steps[r].empty()) continue;
    RankTimes t{.rank = static_cast<int>(r)};
    t.compute_s = median_over_steps(s, s.steps[r], step_compute_s);
    t.wait_s = median_over_steps(s, s.steps[r],
                                 [](const StepRecord& step) { return step.phases[Phase::kComm]; });
    t.comm_time_s =
        median_over_steps(s, s.steps[r], [](const StepRecord& step) { return step.comm_time_s; });
    t.optimizer_s = median_over_steps(
        s, s.steps[r], [](const StepRecord& step) { return step.phases[Phase::kOptimizer]; });
    out.push_back(t);
  }
  split_waits(s, out);
  flag_stragglers(out);
  return out;
}

double grad_busbw_gbps(const RunSummary& s) {
  const double n = s.world_size;
  if (n < 2 || s.steps.empty()) return kNaN;
  const auto zero = s.options.find("zero");
  const bool sharded = zero != s.options.end() && zero->is_number_integer() && zero->get<int>() > 0;
  const double bus_share = (sharded ? 1.0 : 2.0) * (n - 1) / n;
  std::vector<double> values;
  for (const StepRecord& step : measured_steps(s, s.steps.front())) {
    if (step.comm_time_s > 0 && step.comm_bytes > 0) {
      values.push_back(bus_share * static_cast<double>(step.comm_bytes) / step.comm_time_s / 1e9);
    }
  }
  return median_of(std::move(values));
}

// The machine's busy share of its CPUs between a rank's two load readings
// (/proc/stat: every process's time and the kernel's, its network work
// included). NaN when either reading lacks it (older summaries).
double machine_busy_share(const RankResult& r) {
  const profiler::HostLoad &a = r.load_start, &b = r.load_end;
  if (a.cpu_ticks_busy < 0 || b.cpu_ticks_busy < 0 || a.cpu_ticks_total < 0) return kNaN;
  const int64_t total = b.cpu_ticks_total - a.cpu_ticks_total;
  const int64_t busy = b.cpu_ticks_busy - a.cpu_ticks_busy;
  if (total <= 0) return kNaN;
  return std::clamp(static_cast<double>(busy) / static_cast<double>(total), 0.0, 1.0);
}

// The busiest machine's share of its CPUs kept busy over the steps: the
// job's ranks there (busy_cores_on over the machine's cores) or, where
// higher, the machine as a whole (machine_busy_share), which counts the
// kernel's work for the job's traffic that no rank's CPU time holds. NaN
// when a rank did not record its CPU time or its host's cores (older
// summaries).
double busiest_host_cpu(const RunSummary& s) {
  double busiest = kNaN;
  for (const RankResult& r : s.ranks) {
    if (r.load_start.cores <= 0) return kNaN;
    double share = busy_cores_on(s, r) / static_cast<double>(r.load_start.cores);
    if (std::isnan(share)) return kNaN;
    const double machine = machine_busy_share(r);
    if (machine > share) share = machine;
    if (std::isnan(busiest) || share > busiest) busiest = share;
  }
  return busiest;
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
  f.load = run_load(s);
  f.rank_times = rank_times(s);
  f.straggler_s = median_of(straggler_per_step(s));
  if (s.flops_per_step > 0 && f.step_median_s > 0 && s.world_size > 0) {
    f.rank_gflops = s.flops_per_step / s.world_size / f.step_median_s / 1e9;
  }
  f.grad_busbw_gbps = grad_busbw_gbps(s);
  f.host_cpu_busy = busiest_host_cpu(s);
}

}  // namespace

double median_of(std::vector<double> values) {
  std::erase_if(values, [](double v) { return std::isnan(v); });
  if (values.empty()) return kNaN;
  return profiler::summarize(values).median;
}

double median_step_figure(const RunSummary& run, int64_t StepRecord::*figure) {
  if (run.steps.empty()) return kNaN;
  std::vector<double> values;
  for (const StepRecord& s : measured_steps(run, run.steps.front())) {
    values.push_back(static_cast<double>(s.*figure));
  }
  return median_of(std::move(values));
}

std::span<const StepRecord> measured_steps(const RunSummary& run,
                                           const std::vector<StepRecord>& steps) {
  // The warm-up the trainer left out; in older summaries the configured one
  // (checked when the summary was read: a non-negative integer; a database
  // row holding something else counts no warm-up).
  int64_t warmup = run.warmup_steps;
  if (warmup < 0) {
    const auto it = run.options.find("warmup_steps");
    warmup = it != run.options.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
  }
  const size_t skip =
      warmup > 0 && static_cast<size_t>(warmup) < steps.size() ? static_cast<size_t>(warmup) : 0;
  return std::span<const StepRecord>(steps).subspan(skip);
}

RunLoad busier(const RunLoad& a, const RunLoad& b) {
  auto higher = [](double x, double y) { return std::isnan(x) || y > x ? y : x; };
  return {
      higher(a.loadavg_1m_start, b.loadavg_1m_start), higher(a.loadavg_1m_end, b.loadavg_1m_end),
      std::max(a.other_runnable_start, b.other_runnable_start),
      std::max(a.other_runnable_end, b.other_runnable_end), a.loaded.empty() ? b.loaded : a.loaded};
}

std::vector<double> call_busbw_gbps(const AllReduceRow& row) {
  std::vector<double> out;
  for (double t : row.call_time_us) {
    if (t > 0) out.push_back(row.busbw_gbps * row.time_us / t);
  }
  return out;
}

double step_compute_s(const StepRecord& step) {
  return step.step_time_s - step.phases[Phase::kComm];
}

std::vector<double> straggler_per_step(const RunSummary& run) {
  std::vector<std::span<const StepRecord>> ranks;
  size_t steps = SIZE_MAX;
  for (const auto& rank_steps : run.steps) {
    ranks.push_back(measured_steps(run, rank_steps));
    steps = std::min(steps, ranks.back().size());
  }
  std::vector<double> out;
  for (size_t i = 0; !ranks.empty() && i < steps; ++i) {
    double least = INFINITY, sum = 0;
    for (const auto& r : ranks) least = std::min(least, step_compute_s(r[i]));
    for (const auto& r : ranks) sum += step_compute_s(r[i]) - least;
    out.push_back(sum);
  }
  return out;
}

void flag_stragglers(std::vector<RankTimes>& ranks) {
  std::vector<double> compute;
  for (const auto& r : ranks) compute.push_back(r.compute_s);
  const double median = median_of(std::move(compute));
  for (auto& r : ranks) {
    r.compute_vs_median = median > 0 ? r.compute_s / median - 1 : kNaN;
    r.straggler =
        r.compute_vs_median > kStragglerThreshold && r.compute_s - median > kStragglerMinExcessS;
  }
}

std::string straggler_note(const RankTimes& rank) {
  return fmt::format("rank {} computes {:.0f}% above the median", rank.rank,
                     rank.compute_vs_median * 100);
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
