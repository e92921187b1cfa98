// Plain records that cross a process boundary as JSON: the run summary the
// trainer writes, the all-reduce sweep rows and the memory poller samples.
//
// The trainer's ranks send their figures to rank 0 over MPI; rank 0 fills one
// RunSummary and writes it with save_run_summary() (`trainscope train
// --summary FILE`). The suite runner reads it back with load_run_summary() and
// ingests it into the results database (results/results_db.h). Keeping the
// ranks away from SQLite means a crashing job can never corrupt the database.
//
// Each record declares its fields once, in the table that follows it
// (results/fields.h); JSON, SQL columns and their reading and writing all
// derive from those tables. JSON layout: field names are the table's names
// (snake_case); the summary carries the tag `"schema":
// "trainscope.run_summary/1"`. Parsing is strict: a missing required field or
// a value of the wrong type throws trainscope::Error naming the field by its
// path (`ranks[1].data.bytes_held`) and, for the file helpers, the file.
// Unknown fields are ignored so that a newer writer can add fields without
// breaking older readers.
//
// Conventions shared by all records:
//  * times are seconds (`_s`) unless the name says otherwise (`time_us`);
//    memory figures are bytes.
//  * JSON has no NaN or infinity: a non-finite double is written as null and
//    null is read back as NaN (a diverged loss stays visible as NaN).
//  * "unknown" integers use the sentinel -1 (kUnknown), documented per field;
//    things that are absent by nature are std::optional and written as null.
//
// Thread-safety: plain values; no shared state. The load/save helpers touch
// only the files they are given.
#ifndef TRAINSCOPE_RESULTS_RECORDS_H_
#define TRAINSCOPE_RESULTS_RECORDS_H_

#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/storage.h"
#include "profiler/host_load.h"
#include "profiler/process_poller.h"
#include "profiler/stall_watchdog.h"
#include "profiler/step_timer.h"
#include "results/allreduce_algorithms.h"
#include "results/fields.h"

namespace trainscope::results {

// Value of the `schema` field of every run summary this version writes and
// the only one it reads.
inline constexpr std::string_view kRunSummarySchema = "trainscope.run_summary/1";

// Sentinel for integer figures that could not be measured (e.g. PSS without
// permission to read /proc/PID/smaps_rollup).
inline constexpr int64_t kUnknown = -1;

// State of one run (one case, one repetition). A summary is only ever kOk or
// kFailed; kRunning and kSkipped exist in the database only.
enum class RunStatus { kRunning, kOk, kFailed, kSkipped };
}  // namespace trainscope::results
namespace trainscope {
template <>
struct EnumNames<results::RunStatus> {
  static constexpr std::array<std::string_view, 4> names = {"running", "ok", "failed", "skipped"};
  static constexpr bool sql_check = true;
};
}  // namespace trainscope
namespace trainscope::results {
// The statuses a run summary may have.
inline constexpr std::array<RunStatus, 2> kSummaryStatuses = {RunStatus::kOk, RunStatus::kFailed};

// "running", "ok", "failed", "skipped".
std::string_view to_string(RunStatus status);
// Inverse of to_string; std::nullopt for anything else.
std::optional<RunStatus> parse_run_status(std::string_view text);

}  // namespace trainscope::results
namespace trainscope {
template <>
struct EnumNames<profiler::Phase> {
  static constexpr auto names = profiler::kPhaseNames;
  static constexpr bool sql_check = true;
};
template <>
struct EnumNames<kernels::MemoryCategory> {
  static constexpr auto names = kernels::kMemoryCategoryNames;
  static constexpr bool sql_check = false;
};
template <>
struct EnumNames<profiler::ProcessRole> {
  static constexpr auto names = profiler::kProcessRoleNames;
  static constexpr bool sql_check = false;
};
}  // namespace trainscope
namespace trainscope::results {

// Wall time spent in each phase of one training step, seconds. `comm` is the
// training thread's time inside communication calls, from its arrival at each
// collective to its completion (what results/figures.h calls its wait); the
// gradient reduction's part of it is StepRecord::comm_exposed_s.
using PhaseTimes = EnumArray<profiler::Phase, double>;

// Peak bytes held by the tracked allocator, per category of memory.
using MemoryByCategory = EnumArray<kernels::MemoryCategory, int64_t>;

// One optimizer step as seen by one rank.
struct StepRecord {
  int64_t step = 0;
  double loss = 0;  // global mean over ranks (same on every rank)
  double lr = 0;
  double grad_norm = 0;  // after reduction, before clipping
  int64_t tokens = 0;    // tokens this rank consumed in this step
  double step_time_s = 0;
  PhaseTimes phases;
  // Collectives of the gradient reduction and the bytes of their messages
  // (with --zero 1: the reduce-scatter's and the parameter all-gather's, so
  // the same bytes as one all-reduce count twice: two collectives).
  int64_t comm_calls = 0;
  int64_t comm_bytes = 0;
  double comm_exposed_s = 0;
  int64_t mem_active = 0;  // tracked bytes live at the end of the step
  int64_t mem_peak = 0;    // tracked peak bytes during the step
  // Wall time during which a gradient all-reduce of this step was in flight:
  // for overlap its communication thread's time in them, which backward
  // hides in part; otherwise as seen by the training thread.
  double comm_time_s = 0;
  // Of phases[backward]: the fused LM head's gradient GEMMs, done in
  // forward's pass (the logits are never held) and booked to backward, so
  // backward is the whole backward work. No gradient is ready to reduce
  // before they end: what overlap can hide behind is the rest. 0 in
  // summaries from before they were booked so (then inside forward).
  double head_backward_s = 0;
  // When backward finalised each gradient range, as it told the reduction
  // (seconds from backward's start) and where the range begins (elements
  // into the arena): what a replay (--replay-compute) hands on at the same
  // moments, and what a bucket's readiness is read from.
  std::vector<double> backward_ready_s;
  std::vector<int64_t> backward_ready_at;
  bool operator==(const StepRecord&) const = default;
};
template <>
struct Fields<StepRecord> {
  static constexpr auto table = std::tuple{
      field("step", &StepRecord::step),
      field("loss", &StepRecord::loss),
      field("lr", &StepRecord::lr),
      field("grad_norm", &StepRecord::grad_norm),
      field("tokens", &StepRecord::tokens),
      field("step_time_s", &StepRecord::step_time_s),
      field("phases", &StepRecord::phases, {.suffix = "_s"}),  // data_s, forward_s...
      field("comm_calls", &StepRecord::comm_calls),
      field("comm_bytes", &StepRecord::comm_bytes),
      field("comm_exposed_s", &StepRecord::comm_exposed_s),
      field("mem_active", &StepRecord::mem_active),
      field("mem_peak", &StepRecord::mem_peak),
      field("comm_time_s", &StepRecord::comm_time_s).absent_ok(),
      field("head_backward_s", &StepRecord::head_backward_s).absent_ok(),
      field("backward_ready_s", &StepRecord::backward_ready_s).absent_ok(),
      field("backward_ready_at", &StepRecord::backward_ready_at).absent_ok(),
  };
};

// One validation evaluation.
struct ValLoss {
  int64_t step = 0;
  double loss = 0;
  bool operator==(const ValLoss&) const = default;
};
template <>
struct Fields<ValLoss> {
  static constexpr auto table = std::tuple{
      field("step", &ValLoss::step),
      field("loss", &ValLoss::loss),
  };
};

// Distribution of a per-step time over the measured steps, seconds.
struct TimeStats {
  double mean = 0;
  double median = 0;
  double p95 = 0;
  double min = 0;
  double max = 0;
  bool operator==(const TimeStats&) const = default;
};
template <>
struct Fields<TimeStats> {
  static constexpr auto table = std::tuple{
      field("mean", &TimeStats::mean), field("median", &TimeStats::median),
      field("p95", &TimeStats::p95),   field("min", &TimeStats::min),
      field("max", &TimeStats::max),
  };
};

// TimeStats for each phase.
using PhaseStats = EnumArray<profiler::Phase, TimeStats>;

// What the rank's share of the data set cost it.
struct DataStats {
  int64_t examples_held = 0;
  int64_t tokens_held = 0;
  int64_t bytes_held = 0;  // resident bytes of the data shard
  int64_t bytes_read = 0;  // bytes read from disk
  bool operator==(const DataStats&) const = default;
};
template <>
struct Fields<DataStats> {
  static constexpr auto table = std::tuple{
      field("examples_held", &DataStats::examples_held),
      field("tokens_held", &DataStats::tokens_held),
      field("bytes_held", &DataStats::bytes_held),
      field("bytes_read", &DataStats::bytes_read),
  };
};

// Communication totals over the whole run.
struct CommStats {
  int64_t calls = 0;
  int64_t bytes = 0;
  double time_s = 0;
  double exposed_s = 0;
  bool operator==(const CommStats&) const = default;
};
template <>
struct Fields<CommStats> {
  static constexpr auto table = std::tuple{
      field("calls", &CommStats::calls),
      field("bytes", &CommStats::bytes),
      field("time_s", &CommStats::time_s),
      field("exposed_s", &CommStats::exposed_s),
  };
};

// The load of a rank's host at one moment (profiler/host_load.h); unknown
// figures are NaN and -1. In SQL: columns of the rank_results row.
template <>
struct Fields<profiler::HostLoad> {
  using L = profiler::HostLoad;
  static constexpr auto table = std::tuple{
      field("loadavg_1m", &L::loadavg_1m),
      field("loadavg_5m", &L::loadavg_5m),
      field("loadavg_15m", &L::loadavg_15m),
      field("runnable", &L::runnable, {.minus_one_is_null = true}),
      field("other_runnable", &L::other_runnable, {.minus_one_is_null = true}),
      field("cores", &L::cores, {.minus_one_is_null = true}),
      field("cpu_ticks_total", &L::cpu_ticks_total, {.minus_one_is_null = true}).absent_ok(),
      field("cpu_ticks_busy", &L::cpu_ticks_busy, {.minus_one_is_null = true}).absent_ok(),
      field("cpu_ticks_softirq", &L::cpu_ticks_softirq, {.minus_one_is_null = true}).absent_ok(),
  };
};

// The GEMM kernels and threads a rank ran with (kernels/blas_core.h): which
// OpenBLAS core, how it was chosen (detected / selected / environment), the
// strongest one the CPU runs and its vector ISA, and the OpenMP and OpenBLAS
// thread counts in effect, and the precision of the model's GEMMs with, in
// bf16, the library that ran them. Empty in summaries written before it was
// recorded.
struct KernelInfo {
  std::string blas_library;
  std::string blas_core;
  std::string blas_choice;
  std::string blas_best;
  std::string cpu_isa;
  int omp_threads = 0;
  int blas_threads = 0;
  std::string precision;  // "fp32", "bf16"; "" before it was recorded (fp32)
  std::string bf16_gemm;  // bf16: "oneDNN 2.6.3, CPU ISA avx512_core_bf16"
  // fp32: the library of the linear layers' GEMMs (kernels/gemm_backend.h):
  // "openblas", "onednn", "auto: onednn for 3 of 7 timed shapes"; "" before
  // it was recorded (openblas).
  std::string gemm;
  // The level the element-wise kernels ran at (kernels/simd.h): "AVX3
  // (Highway 1.0.3, dispatched; this CPU runs AVX3, AVX2, SSE4, SCALAR)";
  // "" before it was recorded.
  std::string simd;
  // "OpenBLAS 0.3.21 Cooperlake" (+ ", bf16 oneDNN ...", + ", GEMMs auto: ..."
  // when not OpenBLAS alone): what two runs must share for their GEMM timings
  // to compare.
  std::string label() const {
    const bool blas_only = gemm.empty() || gemm == "openblas";
    return blas_library + " " + blas_core + (bf16_gemm.empty() ? "" : ", bf16 " + bf16_gemm) +
           (blas_only ? "" : ", GEMMs " + gemm);
  }
  bool operator==(const KernelInfo&) const = default;
};
template <>
struct Fields<KernelInfo> {
  static constexpr auto table = std::tuple{
      field("blas_library", &KernelInfo::blas_library),
      field("blas_core", &KernelInfo::blas_core),
      field("blas_choice", &KernelInfo::blas_choice),
      field("blas_best", &KernelInfo::blas_best),
      field("cpu_isa", &KernelInfo::cpu_isa),
      field("omp_threads", &KernelInfo::omp_threads),
      field("blas_threads", &KernelInfo::blas_threads),
      field("precision", &KernelInfo::precision),
      field("bf16_gemm", &KernelInfo::bf16_gemm),
      field("gemm", &KernelInfo::gemm).absent_ok(),
      field("simd", &KernelInfo::simd).absent_ok(),
  };
};

// Per-rank totals of a run. In SQL: a rank_results row; the phase statistics
// are rank_phase_stats rows.
struct RankResult {
  int rank = 0;
  std::string host;
  // The physical machine (profiler::machine_id): the virtual hosts of one
  // cluster have their own host names and share it, and its cores. "" in
  // older summaries: then the host stands for it.
  std::string machine;
  int64_t pid = 0;
  double tokens_per_s = 0;
  TimeStats step_time;
  PhaseStats phases;
  int64_t tracked_peak_total = 0;
  MemoryByCategory tracked_peak_by_category;
  int64_t vm_hwm = kUnknown;      // /proc/self/status VmHWM, bytes
  int64_t vm_rss = kUnknown;      // VmRSS at the end of the run, bytes
  int64_t pss = kUnknown;         // smaps_rollup Pss, bytes
  int64_t huge_pages = kUnknown;  // smaps_rollup AnonHugePages at the end, bytes
  DataStats data;
  CommStats comm;
  // The host's load as training started and as it ended (docs/METRICS.md,
  // "Machine load"); unknown in summaries written before it was recorded.
  profiler::HostLoad load_start;
  profiler::HostLoad load_end;
  // CPU seconds (every thread: OpenMP's, MPI's progress) the rank's process
  // used from its first step to its summary, and the wall seconds between:
  // cpu_s / steps_wall_s is the cores it kept busy. A replayed rank sleeps
  // its compute, so what it burns is the communication's (and a host's CPUs
  // all busy mean its links waited for them). NaN in older summaries.
  double cpu_s = std::numeric_limits<double>::quiet_NaN();
  double steps_wall_s = std::numeric_limits<double>::quiet_NaN();
  KernelInfo kernels;
  bool operator==(const RankResult&) const = default;
};
template <>
struct Fields<RankResult> {
  static constexpr auto table = std::tuple{
      field("rank", &RankResult::rank),
      field("host", &RankResult::host),
      field("machine", &RankResult::machine).absent_ok(),
      field("pid", &RankResult::pid),
      field("tokens_per_s", &RankResult::tokens_per_s),
      field("step_time", &RankResult::step_time, {.prefix = "step_time_", .suffix = "_s"}),
      field("phases", &RankResult::phases, {.not_stored = true}),
      field("tracked_peak_total", &RankResult::tracked_peak_total),
      field("tracked_peak_by_category", &RankResult::tracked_peak_by_category, {.prefix = "peak_"}),
      field("vm_hwm", &RankResult::vm_hwm, {.minus_one_is_null = true}),
      field("vm_rss", &RankResult::vm_rss, {.minus_one_is_null = true}),
      field("pss", &RankResult::pss, {.minus_one_is_null = true}),
      field("huge_pages", &RankResult::huge_pages, {.minus_one_is_null = true}).absent_ok(),
      field("data", &RankResult::data, {.prefix = "data_"}),
      field("comm", &RankResult::comm, {.prefix = "comm_"}),
      field("load_start", &RankResult::load_start, {.prefix = "load_start_"}).absent_ok(),
      field("load_end", &RankResult::load_end, {.prefix = "load_end_"}).absent_ok(),
      field("cpu_s", &RankResult::cpu_s).absent_ok(),
      field("steps_wall_s", &RankResult::steps_wall_s).absent_ok(),
      field("kernels", &RankResult::kernels, {.prefix = "kernel_"}).absent_ok(),
  };
};

// Whole-run figures (over all ranks).
struct Totals {
  double tokens_per_s = 0;
  double step_time_median_s = 0;
  double step_time_p95_s = 0;
  bool operator==(const Totals&) const = default;
};
template <>
struct Fields<Totals> {
  static constexpr auto table = std::tuple{
      field("tokens_per_s", &Totals::tokens_per_s),
      field("step_time_median_s", &Totals::step_time_median_s),
      field("step_time_p95_s", &Totals::step_time_p95_s),
  };
};

// Everything one `trainscope train` run reports; written once by rank 0. In
// SQL: columns of its run's `runs` row (NULL for a run without a summary),
// with steps, val and ranks in child tables.
struct RunSummary {
  std::string schema = std::string(kRunSummarySchema);
  std::string trainscope_version;
  std::string git_revision;
  nlohmann::json model = nlohmann::json::object();    // model config as given
  nlohmann::json options = nlohmann::json::object();  // train options (batch, block, steps, lr...)
  int world_size = 1;
  int threads_per_rank = 1;
  // What the gradients were all-reduced as (--comm-dtype): "fp32" or
  // "bf16". Summaries written before it was recorded read "fp32".
  std::string comm_dtype = "fp32";
  // Model parameters (with LoRA adapters) and those that train: all of them,
  // or the adapters. 0 in summaries written before they were recorded.
  int64_t parameters = 0;
  int64_t trainable_parameters = 0;
  // Model FLOPs of one training step over the whole batch (forward and
  // backward, LlamaModel::train_flops); 0 in summaries written before it
  // was recorded.
  double flops_per_step = 0;
  std::vector<std::string> hosts;
  // OMPI_MCA_* settings and interfaces in effect. transport_per_rank is empty
  // when every rank saw the same settings, else indexed by rank.
  std::map<std::string, std::string> transport;
  std::vector<std::map<std::string, std::string>> transport_per_rank;
  RunStatus status = RunStatus::kOk;  // kOk or kFailed
  std::string error;                  // empty when status is kOk
  std::optional<int64_t> failed_step;
  // steps[r] holds rank r's steps in order; ranks that did not record steps
  // have an empty list (the vector may be shorter than world_size).
  std::vector<std::vector<StepRecord>> steps;
  std::vector<ValLoss> val;
  std::vector<RankResult> ranks;
  Totals totals;
  // Leading steps left out of every timing statistic: the larger of
  // options.warmup_steps and where the step times became steady (MSER-5,
  // profiler/steady_state.h; the latest over the ranks). kUnknown in
  // summaries written before it was detected: options.warmup_steps then.
  int64_t warmup_steps = kUnknown;
  bool operator==(const RunSummary&) const = default;
};
template <>
struct Fields<RunSummary> {
  static constexpr auto table = std::tuple{
      field("schema", &RunSummary::schema, {.column = "summary_schema"}),
      field("trainscope_version", &RunSummary::trainscope_version),
      field("git_revision", &RunSummary::git_revision),
      field("model", &RunSummary::model),
      field("options", &RunSummary::options),
      field("world_size", &RunSummary::world_size, {.column = "summary_world_size"}),
      field("threads_per_rank", &RunSummary::threads_per_rank),
      // Runs already in a database when the column is added read "fp32".
      field("comm_dtype", &RunSummary::comm_dtype, {.default_value = "'fp32'"}).absent_ok(),
      field("parameters", &RunSummary::parameters).absent_ok(),
      field("trainable_parameters", &RunSummary::trainable_parameters).absent_ok(),
      field("flops_per_step", &RunSummary::flops_per_step).absent_ok(),
      field("hosts", &RunSummary::hosts),
      field("transport", &RunSummary::transport, {.column = "summary_transport"}),
      field("transport_per_rank", &RunSummary::transport_per_rank).absent_ok(),
      field("status", &RunSummary::status, {.column = "summary_status"}).only(kSummaryStatuses),
      field("error", &RunSummary::error, {.column = "summary_error"}),
      field("failed_step", &RunSummary::failed_step).absent_ok(),
      // In SQL the number of per-rank lists; the steps are rows of `steps`.
      field("steps", &RunSummary::steps, {.column = "step_lists", .count_only = true}),
      field("val", &RunSummary::val, {.not_stored = true}),
      field("ranks", &RunSummary::ranks, {.not_stored = true}),
      field("totals", &RunSummary::totals),
      field("warmup_steps", &RunSummary::warmup_steps, {.minus_one_is_null = true}).absent_ok(),
  };
  // The schema tag, and ranks and step lists that fit world_size.
  static void validate(const RunSummary& s, const JsonReader& r);
};

// One row of an all-reduce sweep (nccl-tests columns).
struct AllReduceRow {
  std::string transport;  // e.g. "tcp", "shm", "local"
  std::string links;      // interfaces / links used, free text
  int world_size = 1;
  int64_t size_bytes = 0;
  int64_t count = 0;  // elements
  std::string dtype;  // "float32"...
  std::string redop;  // "sum"...
  double time_us = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  int64_t wrong = 0;  // elements that failed verification
  // Each timed call, in order: the slowest rank's time of that call. The
  // samples a regression check tests (docs/METRICS.md); empty in rows
  // written before it was recorded.
  std::vector<double> call_time_us;
  // How it was reduced (results/allreduce_algorithms.h): trainscope's
  // --allreduce and, for "mpi", the Open MPI algorithm forced by the run's
  // MCA settings (0: Open MPI's own choice). Rows written before these were
  // recorded ran "mpi" with Open MPI's choice, and read so.
  std::string algorithm = std::string(kDefaultAllReduceAlgorithm);
  int mpi_algorithm = 0;
  bool operator==(const AllReduceRow&) const = default;
};
template <>
struct Fields<AllReduceRow> {
  static constexpr auto table = std::tuple{
      field("transport", &AllReduceRow::transport),
      field("links", &AllReduceRow::links),
      field("world_size", &AllReduceRow::world_size),
      field("size_bytes", &AllReduceRow::size_bytes),
      field("count", &AllReduceRow::count),
      field("dtype", &AllReduceRow::dtype),
      field("redop", &AllReduceRow::redop),
      field("time_us", &AllReduceRow::time_us),
      field("algbw_gbps", &AllReduceRow::algbw_gbps),
      field("busbw_gbps", &AllReduceRow::busbw_gbps),
      field("wrong", &AllReduceRow::wrong),
      field("call_time_us", &AllReduceRow::call_time_us).absent_ok(),
      // Rows already in a database when the column is added read "mpi".
      field("algorithm", &AllReduceRow::algorithm, {.default_value = "'mpi'"}).absent_ok(),
      field("mpi_algorithm", &AllReduceRow::mpi_algorithm).absent_ok(),
  };
  // A known algorithm, and an Open MPI algorithm only under "mpi".
  static void validate(const AllReduceRow& row, const JsonReader& r);
};

// One observation of one process by the memory poller (profiler/
// process_poller.h), as the results database stores it.
template <>
struct Fields<profiler::ProcessSample> {
  using S = profiler::ProcessSample;
  static constexpr auto table = std::tuple{
      field("t_s", &S::time_seconds, {.not_null = true}),
      field("pid", &S::pid),
      field("ppid", &S::ppid),
      field("role", &S::role),
      field("rank", &S::rank, {.minus_one_is_null = true}),
      field("rss_bytes", &S::rss_bytes),
      field("pss_bytes", &S::pss_bytes, {.minus_one_is_null = true}),
      field("command", &S::command),
  };
};

// Where a rank was: the file each rank of `trainscope train --status-dir`
// keeps current (profiler/stall_watchdog.h), which the suite runner reads
// when a job hangs or dies.
template <>
struct Fields<profiler::RankStatus> {
  using S = profiler::RankStatus;
  static constexpr auto table = std::tuple{
      field("rank", &S::rank),
      field("host", &S::host),
      field("pid", &S::pid),
      field("stage", &S::stage),
      field("step", &S::step),
      field("phase", &S::phase),
      field("collective", &S::collective),
      field("bucket", &S::bucket),
      field("wait_s", &S::wait_s),
      field("step_s", &S::step_s),
      field("phase_s", &S::phase_s),
      field("stalled", &S::stalled),
  };
};

// Reads and checks a run summary file. Errors (unreadable file, bad JSON,
// wrong schema tag, missing or mistyped field) name the file and the field.
RunSummary load_run_summary(const std::filesystem::path& path);

// Writes the summary atomically: a temporary file in the same directory,
// flushed to disk, then renamed over `path`. A reader never sees a partial
// file; on failure nothing is left behind and trainscope::Error names `path`.
void save_run_summary(const RunSummary& summary, const std::filesystem::path& path);

// The file rank `rank` keeps its status in, inside `status_dir`
// (`trainscope train --status-dir`): "rank-R.json".
std::filesystem::path rank_status_path(const std::filesystem::path& status_dir, int rank);
// A rank's status file, written atomically / read strictly (errors name the
// file and the field).
void save_rank_status(const profiler::RankStatus& status, const std::filesystem::path& path);
profiler::RankStatus load_rank_status(const std::filesystem::path& path);

// Reads JSON Lines (one record per line, blank lines ignored) of sweep rows;
// errors name the file, the line and the field.
std::vector<AllReduceRow> load_allreduce_rows(const std::filesystem::path& path);

// nlohmann's hooks for every described record (json j = record;
// j.get<RankResult>()), reading strictly.
template <Described T>
void to_json(nlohmann::json& j, const T& v) {
  j = to_json_value(v);
}
template <Described T>
void from_json(const nlohmann::json& j, T& v) {
  from_json_value(JsonReader(j), v);
}

}  // namespace trainscope::results

#endif  // TRAINSCOPE_RESULTS_RECORDS_H_
