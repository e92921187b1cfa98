#include "training/run/report.h"

#include <cblas.h>
#include <fmt/format.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <map>
#include <span>
#include <string>

#include "comm/all_reducer.h"
#include "kernels/blas_core.h"
#include "kernels/gemm_backend.h"
#include "kernels/matmul_bf16.h"
#include "kernels/simd.h"
#include "profiler/clock.h"
#include "profiler/memory_tracker.h"
#include "profiler/stats.h"
#include "results/figures.h"

#ifndef TRAINSCOPE_VERSION
#define TRAINSCOPE_VERSION "0"
#endif
#ifndef TRAINSCOPE_GIT_REVISION
#define TRAINSCOPE_GIT_REVISION "unknown"
#endif

namespace trainscope::training {
namespace {

using nlohmann::json;
using profiler::Phase;

// FNV-1a over 32-bit words: any differing bit in any parameter changes it.
uint64_t params_hash(std::span<const float> data) {
  uint64_t h = 1469598103934665603ull;
  for (float f : data) {
    h ^= std::bit_cast<uint32_t>(f);
    h *= 1099511628211ull;
  }
  return h;
}

results::TimeStats to_time_stats(const profiler::Summary& s) {
  return {s.mean, s.median, s.p95, s.min, s.max};
}

// Over the measured steps, as the step's records report each phase.
results::PhaseStats phase_stats(const profiler::RunTimes& run) {
  results::PhaseStats stats;
  for (int i = 0; i < profiler::kNumPhases; ++i) {
    const auto p = static_cast<Phase>(i);
    stats[p] = to_time_stats(reported_inclusive(p) ? run[p].inclusive : run[p].exclusive);
  }
  return stats;
}

results::DataStats to_data_stats(const DataStats& ds) {
  return {ds.examples_held, ds.tokens_held, ds.bytes_held, ds.bytes_read};
}

// ---- the final tables, one row per rank -----------------------------------------

std::string memory_table(const std::vector<results::RankResult>& ranks) {
  using kernels::format_bytes;
  std::string table =
      "\ntracked peak memory by category, process peak resident memory (VmHWM) and what of it is "
      "on huge pages at the end (AnonHugePages):\n";
  table += fmt::format("{:>4}", "rank");
  for (std::string_view label : kernels::kMemoryCategoryLabels) {
    table += fmt::format(" {:>11}", label);
  }
  table += fmt::format(" {:>11} {:>11} {:>11}\n", "tracked", "VmHWM", "huge pages");
  for (const results::RankResult& rr : ranks) {
    table += fmt::format("{:>4}", rr.rank);
    for (int64_t bytes : rr.tracked_peak_by_category.values) {
      table += fmt::format(" {:>11}", format_bytes(bytes));
    }
    table += fmt::format(" {:>11} {:>11} {:>11}\n", format_bytes(rr.tracked_peak_total),
                         format_bytes(rr.vm_hwm), format_bytes(rr.huge_pages));
  }
  return table;
}

std::string phase_table(const std::vector<results::RankResult>& ranks) {
  std::string table =
      "\nmedian time per step by phase (ms; comm includes time overlapped with backward):\n";
  table += fmt::format("{:>4}", "rank");
  for (std::string_view name : profiler::kPhaseNames) table += fmt::format(" {:>10}", name);
  table += fmt::format(" {:>10}\n", "step");
  for (const results::RankResult& rr : ranks) {
    table += fmt::format("{:>4}", rr.rank);
    for (const results::TimeStats& p : rr.phases.values) {
      table += fmt::format(" {:>10.1f}", p.median * 1e3);
    }
    table += fmt::format(" {:>10.1f}\n", rr.step_time.median * 1e3);
  }
  return table;
}

// Each rank's step split into computing and waiting, and which rank the
// others wait for (results/figures.h).
std::string straggler_table(const results::RunFigures& f) {
  std::string table =
      "\nmedian time per step computing and waiting in collectives (ms; the optimizer is part of "
      "compute, wait is waiting for slower ranks plus transfer):\n";
  table += fmt::format("{:>4} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "rank", "compute", "optimizer",
                       "wait", "for others", "transfer");
  for (const results::RankTimes& r : f.rank_times) {
    table += fmt::format("{:>4} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f}{}\n", r.rank,
                         r.compute_s * 1e3, r.optimizer_s * 1e3, r.wait_s * 1e3,
                         r.waiting_for_others_s * 1e3, r.transfer_s * 1e3,
                         r.straggler ? "  straggler: " + results::straggler_note(r) : "");
  }
  return table + fmt::format(
                     "straggler figure (sum over ranks of compute beyond the fastest): "
                     "{:.1f} ms per step\n",
                     f.straggler_s * 1e3);
}

}  // namespace

RunReport::RunReport(const RunContext& ctx, const RunPlan& plan, const TrainingData& data,
                     TrainingState& state, const StepLog& log)
    : ctx_(ctx), plan_(plan), data_(data), state_(state), log_(log) {}

void RunReport::gather_totals(results::RunSummary& summary) {
  // Every rank leaves out the same steps: the latest steady start of any.
  double warmup = static_cast<double>(state_.timer->steady_state_start());
  ctx_.comm.all_reduce_max({&warmup, 1});
  run_times_ = state_.timer->run_times(static_cast<int64_t>(warmup));
  summary.warmup_steps = run_times_.warmup_steps;
  for (const std::string& report : ctx_.comm.all_gather(rank_report().dump())) {
    per_rank_.push_back(json::parse(report));
  }
  check_parameters_agree();
  describe_run(summary);
  add_rank_results(summary);
  add_transports(summary);
  add_totals(summary);
}

// What this rank sends to the others at the end: its results and steps, a
// hash of its parameters, its transport settings and its trace.
json RunReport::rank_report() {
  LlamaModel<float>& model = *state_.model;
  json report = {{"result", rank_result()},
                 {"steps", log_.steps},
                 {"param_hash", params_hash(model.params()) * 31 + params_hash(model.adapters())}};
  std::map<std::string, std::string> transport;
  for (auto& [k, v] : comm::transport_settings()) transport[k] = v;
  report["transport"] = transport;
  report["trace"] = ctx_.options.trace_path.empty() ? std::string() : state_.recorder.serialize();
  return report;
}

results::RankResult RunReport::rank_result() const {
  const profiler::RunTimes& run = run_times_;
  results::RankResult me;
  me.rank = ctx_.rank;
  me.host = ctx_.comm.host();
  me.machine = profiler::machine_id();
  me.pid = ::getpid();
  me.step_time = to_time_stats(run.wall);
  me.phases = phase_stats(run);
  me.tokens_per_s =
      run.wall.median > 0 ? static_cast<double>(data_.rows) * data_.seq_len / run.wall.median : 0;
  me.tracked_peak_total = log_.peaks.total;
  me.tracked_peak_by_category.values = log_.peaks.by_category;
  const profiler::ProcessMemory pm = profiler::self_process_memory(true);
  me.vm_hwm = pm.hwm_bytes;
  me.vm_rss = pm.rss_bytes;
  me.pss = pm.pss_bytes;
  me.huge_pages = pm.huge_bytes;
  me.data = to_data_stats(data_.source->stats());
  me.comm = log_.comm_total;
  me.load_start = log_.load_start;
  me.load_end = profiler::read_host_load(log_.job_on_machine);
  me.cpu_s = profiler::process_cpu_seconds() - log_.cpu_start_s;
  me.steps_wall_s = profiler::seconds_since(log_.wall_start);
  const kernels::BlasInfo blas = kernels::blas_info();
  const Precision precision = ctx_.options.precision;
  me.kernels = {
      .blas_library = blas.library,
      .blas_core = blas.core,
      .blas_choice = std::string(kernels::blas_choice_name(blas.choice)),
      .blas_best = blas.best,
      .cpu_isa = blas.isa,
      .omp_threads = omp_get_max_threads(),
      .blas_threads = openblas_get_num_threads(),
      .precision = std::string(enum_name(precision)),
      .bf16_gemm = precision == Precision::kBf16 ? kernels::onednn_description() : std::string(),
      .gemm = kernels::gemm_choices_summary(),
      .simd = kernels::simd_summary()};
  return me;
}

// Data parallelism's promise: every rank ends with rank 0's parameters.
void RunReport::check_parameters_agree() const {
  const uint64_t hash0 = per_rank_[0]["param_hash"].get<uint64_t>();
  for (int r = 1; r < ctx_.world; ++r) {
    const uint64_t hash = per_rank_[r]["param_hash"].get<uint64_t>();
    if (hash != hash0) {
      throw Error(fmt::format("rank {} ended with parameters different from rank 0's (hash {:016x} "
                              "vs {:016x})",
                              r, hash, hash0),
                  kExitFailure);
    }
  }
}

void RunReport::describe_run(results::RunSummary& summary) const {
  summary.trainscope_version = TRAINSCOPE_VERSION;
  summary.git_revision = TRAINSCOPE_GIT_REVISION;
  summary.model = to_hf_config(plan_.config);
  summary.options = plan_.options_json;
  summary.world_size = ctx_.world;
  summary.threads_per_rank = plan_.threads;
  summary.comm_dtype = std::string(enum_name(ctx_.options.comm_dtype));
  summary.parameters = static_cast<int64_t>(state_.param_count() + state_.model->adapters().size());
  summary.trainable_parameters = static_cast<int64_t>(state_.trainable_count());
  summary.flops_per_step = state_.flops_per_step;
}

void RunReport::add_rank_results(results::RunSummary& summary) const {
  for (const json& report : per_rank_) {
    results::RankResult rr = report["result"].get<results::RankResult>();
    if (std::find(summary.hosts.begin(), summary.hosts.end(), rr.host) == summary.hosts.end()) {
      summary.hosts.push_back(rr.host);
    }
    summary.ranks.push_back(std::move(rr));
    summary.steps.push_back(report["steps"].get<std::vector<results::StepRecord>>());
  }
}

// Rank 0's settings, and every rank's only where they differ.
void RunReport::add_transports(results::RunSummary& summary) const {
  std::vector<std::map<std::string, std::string>> transports;
  for (const json& report : per_rank_) {
    transports.push_back(report["transport"].get<std::map<std::string, std::string>>());
  }
  summary.transport = transports[0];
  if (std::any_of(transports.begin(), transports.end(),
                  [&](const auto& t) { return t != transports[0]; })) {
    summary.transport_per_rank = transports;
  }
}

// The job is as fast as its slowest rank.
void RunReport::add_totals(results::RunSummary& summary) const {
  double worst_median = 0, worst_p95 = 0;
  for (const results::RankResult& rr : summary.ranks) {
    worst_median = std::max(worst_median, rr.step_time.median);
    worst_p95 = std::max(worst_p95, rr.step_time.p95);
  }
  summary.totals.step_time_median_s = worst_median;
  summary.totals.step_time_p95_s = worst_p95;
  summary.totals.tokens_per_s = worst_median > 0 ? data_.tokens_per_step() / worst_median : 0;
}

// ---- output (rank 0) ------------------------------------------------------------

void RunReport::write_outputs(const results::RunSummary& summary) {
  state_.trace_stream.reset();  // its last flush
  if (!ctx_.lead) return;
  const options::TrainOptions& o = ctx_.options;
  if (!o.trace_path.empty()) write_trace();
  if (!o.quiet && !log_.steps.empty()) print_report(summary);
  if (!o.summary_path.empty()) results::save_run_summary(summary, o.summary_path);
}

void RunReport::write_trace() const {
  std::vector<profiler::RankTrace> traces;
  for (int r = 0; r < ctx_.world; ++r) {
    traces.push_back({per_rank_[r]["trace"].get<std::string>(), plan_.clock_offsets[r]});
  }
  profiler::write_merged_chrome_trace(ctx_.options.trace_path, traces);
}

void RunReport::print_report(const results::RunSummary& summary) const {
  const results::Totals& t = summary.totals;
  const double flops = state_.flops_per_step;
  ctx_.say(
      fmt::format("\nsummary: {} steps measured (first {} excluded as warm-up: --warmup-steps {}, "
                  "or until step times are steady), median step {:.1f} ms, "
                  "p95 {:.1f} ms, {:.0f} tokens/s, {:.1f} GFLOP/s\n",
                  run_times_.measured_steps, run_times_.warmup_steps, ctx_.options.warmup_steps,
                  t.step_time_median_s * 1e3, t.step_time_p95_s * 1e3, t.tokens_per_s,
                  t.step_time_median_s > 0 ? flops / t.step_time_median_s / 1e9 : 0.0));
  ctx_.say(memory_table(summary.ranks));
  ctx_.say(phase_table(summary.ranks));
  if (ctx_.world > 1) ctx_.say(straggler_table(results::run_figures(&summary, {})));
}

}  // namespace trainscope::training
