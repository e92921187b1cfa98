#include "training/trainer.h"

#include <cblas.h>
#include <fmt/format.h>
#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "comm/watched_communicator.h"
#include "kernels/adamw.h"
#include "kernels/atomic_file.h"
#include "kernels/blas_core.h"
#include "kernels/matmul_bf16.h"
#include "kernels/check.h"
#include "profiler/clock.h"
#include "profiler/host_load.h"
#include "profiler/memory_tracker.h"
#include "profiler/stall_watchdog.h"
#include "profiler/stats.h"
#include "profiler/step_timer.h"
#include "profiler/trace.h"
#include "results/figures.h"
#include "training/checkpoint.h"
#include "training/hf_checkpoint.h"
#include "training/data/pipeline.h"
#include "training/llama_model.h"
#include "training/tokenizers/tokenizer.h"

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
using profiler::seconds_since;
using kernels::MemoryCategory;

void set_threads(int n) {
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

// FNV-1a over 32-bit words: any differing bit in any parameter changes it.
uint64_t params_hash(std::span<const float> data) {
  uint64_t h = 1469598103934665603ull;
  for (float f : data) {
    h ^= std::bit_cast<uint32_t>(f);
    h *= 1099511628211ull;
  }
  return h;
}

// Every rank's options against rank 0's; names the first differing field.
void check_ranks_agree(comm::Communicator& comm, const json& mine) {
  if (comm.size() == 1) return;
  const std::vector<std::string> all = comm.all_gather(mine.dump());
  const json ref = json::parse(all[0]);
  for (int r = 1; r < comm.size(); ++r) {
    const json other = json::parse(all[r]);
    const json patch = json::diff(ref, other);
    if (patch.empty()) continue;
    const std::string path = patch[0]["path"].get<std::string>();
    const json::json_pointer ptr(path);
    const std::string a = ref.contains(ptr) ? ref[ptr].dump() : "(absent)";
    const std::string b = other.contains(ptr) ? other[ptr].dump() : "(absent)";
    throw Error(fmt::format("ranks disagree on the configuration: field '{}' is {} on rank 0 but "
                            "{} on rank {}",
                            path, a, b, r));
  }
}

// What one step computed, beside what the profiler measured of it.
struct StepFigures {
  int64_t step = 0;
  double loss = 0;
  double lr = 0;
  double grad_norm = 0;
  double seconds = 0;  // wall time of the whole step
};

// ---- filling results records --------------------------------------------------

results::TimeStats to_time_stats(const profiler::Summary& s) {
  return {s.mean, s.median, s.p95, s.min, s.max};
}

// Phases are reported without the phases nested in them (backward without
// the comm it overlaps), except comm, which is whole.
bool reported_inclusive(Phase p) { return p == Phase::kComm; }

results::StepRecord make_step_record(const StepFigures& figures, int64_t tokens,
                                     const profiler::StepTimes& times,
                                     const comm::GradSyncStats& comm_stats,
                                     const kernels::MemorySnapshot& memory) {
  results::StepRecord rec;
  rec.step = figures.step;
  rec.loss = figures.loss;
  rec.lr = figures.lr;
  rec.grad_norm = figures.grad_norm;
  rec.tokens = tokens;
  rec.step_time_s = figures.seconds;
  for (int i = 0; i < profiler::kNumPhases; ++i) {
    const auto p = static_cast<Phase>(i);
    rec.phases[p] = reported_inclusive(p) ? times.seconds(p) : times.exclusive(p);
  }
  rec.comm_calls = comm_stats.calls;
  rec.comm_bytes = comm_stats.bytes;
  rec.comm_exposed_s = comm_stats.exposed_s;
  rec.comm_time_s = comm_stats.comm_s;
  rec.mem_active = memory.total.active;
  rec.mem_peak = memory.total.peak;
  return rec;
}

// Over the measured steps, as make_step_record reports each phase.
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

// The final tables, one row per rank.
std::string memory_table(const std::vector<results::RankResult>& ranks) {
  using kernels::format_bytes;
  std::string table =
      "\ntracked peak memory by category, and process peak resident memory (VmHWM):\n";
  table += fmt::format("{:>4}", "rank");
  for (std::string_view label : kernels::kMemoryCategoryLabels) table += fmt::format(" {:>11}", label);
  table += fmt::format(" {:>11} {:>11}\n", "tracked", "VmHWM");
  for (const results::RankResult& rr : ranks) {
    table += fmt::format("{:>4}", rr.rank);
    for (int64_t bytes : rr.tracked_peak_by_category.values) {
      table += fmt::format(" {:>11}", format_bytes(bytes));
    }
    table += fmt::format(" {:>11} {:>11}\n", format_bytes(rr.tracked_peak_total),
                         format_bytes(rr.vm_hwm));
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
    for (const results::TimeStats& p : rr.phases.values) table += fmt::format(" {:>10.1f}", p.median * 1e3);
    table += fmt::format(" {:>10.1f}\n", rr.step_time.median * 1e3);
  }
  return table;
}

// Each rank's step split into computing and waiting, and which rank the
// others wait for (results/figures.h).
std::string straggler_table(const results::RunFigures& f) {
  std::string table = "\nmedian time per step computing and waiting in collectives (ms):\n";
  table += fmt::format("{:>4} {:>10} {:>10}\n", "rank", "compute", "wait");
  for (const results::RankTimes& r : f.rank_times) {
    table += fmt::format("{:>4} {:>10.1f} {:>10.1f}{}\n", r.rank, r.compute_s * 1e3, r.wait_s * 1e3,
                         r.straggler ? "  straggler: " + results::straggler_note(r) : "");
  }
  return table + fmt::format("straggler figure (sum over ranks of compute beyond the fastest): "
                             "{:.1f} ms per step\n",
                             f.straggler_s * 1e3);
}

// ---- the run ------------------------------------------------------------------

// Options that must match a checkpoint for a resume to continue the same run.
void check_resume_compatible(const json& saved, const json& now, const std::string& where) {
  for (const char* key : {"batch", "block", "tokenizer", "fine_tune", "lora"}) {
    if (saved.contains(key) && saved[key] != now[key]) {
      throw Error(fmt::format("--resume: {} was saved with {} = {}, this run has {}", where, key,
                              saved[key].dump(), now[key].dump()));
    }
  }
  // Everything that decides which documents and tokens make the batches.
  for (const char* key : {"source", "split", "text_field", "delimiter", "one_per_line", "seed",
                          "shuffle", "batching", "mask_padding", "mask_prompt"}) {
    if (saved.contains("data") && saved["data"].contains(key) && saved["data"][key] != now["data"][key]) {
      throw Error(fmt::format("--resume: {} was saved with data {} = {}, this run has {}", where,
                              key, saved["data"][key].dump(), now["data"][key].dump()));
    }
  }
}


// The run's tracked peaks. The tracker's peaks are reset every step (so each
// step records its own); the run's peak is the max over the setup and every step.
struct RunPeaks {
  std::array<int64_t, kernels::kNumMemoryCategories> by_category{};
  int64_t total = 0;

  void absorb(const kernels::MemorySnapshot& snapshot) {
    for (int c = 0; c < kernels::kNumMemoryCategories; ++c) {
      by_category[c] = std::max(by_category[c], snapshot.by_category[c].peak);
    }
    total = std::max(total, snapshot.total.peak);
  }
};

// One call of run_training(), as stages that run_training() calls in order;
// members hold what one stage hands to the next. Every rank walks the same
// stages, so every rank issues the same collectives in the same order.
class TrainingRun {
 public:
  // `comm` reports its collectives to `watchdog`; both outlive the run.
  TrainingRun(const TrainOptions& options, comm::Communicator& comm,
              profiler::StallWatchdog& watchdog, std::FILE* out);
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  void configure();      // options, model config, resume, tokenizer, threads
  void load_data();      // this rank's batch source (and validation source)
  void build_model();    // model, AdamW state, initial weights, gradient reduction
  void print_header() const;
  std::string trainable_line() const;
  void train();          // the loop, up to --steps or a non-finite loss
  void gather_totals();  // every rank's results into the summary (rank 0 uses it)
  void write_outputs();  // trace, final tables and summary file (rank 0)
  results::RunSummary take_summary() { return std::move(summary_); }

 private:
  void say(const std::string& text) const;

  void choose_model();
  void check_options() const;
  void check_zero() const;
  void check_outputs() const;
  void check_resume() const;
  void open_tokenizer();
  void agree_across_ranks();
  void measure_clock_offsets();
  void broadcast_initial_state(std::span<float> adam_m, std::span<float> adam_v);
  void prepare_steps();
  void prepare_tracing();

  bool run_step(int64_t step);
  int64_t load_batch(int64_t step);
  double forward_backward(int64_t step, int64_t global_predicted);
  void inject_delay() const;
  void stop_on_bad_loss(int64_t step, double loss);
  double optimizer_step(int64_t step, double lr);
  void gather_parameters();
  void plan_optimizer_pieces(int64_t P);
  int64_t bucket_bytes() const { return static_cast<int64_t>(options_.bucket_mb * 1024 * 1024); }
  void maybe_evaluate(int64_t step);
  void evaluate(int64_t step);
  void maybe_checkpoint(int64_t step);
  kernels::Buffer<float> gather_state(const kernels::Buffer<float>& pieces);
  void record_step(const StepFigures& figures);
  void log_step(const StepFigures& figures) const;

  std::vector<pid_t> ranks_on_this_host();
  json rank_report();
  results::RankResult rank_result() const;
  void check_parameters_agree() const;
  void describe_run();
  void add_rank_results();
  void add_transports();
  void add_totals();
  void write_trace() const;
  void print_report() const;

  bool is_last(int64_t step) const { return step + 1 == options_.steps; }
  std::size_t param_count() const { return static_cast<std::size_t>(model_->layout().total()); }
  std::size_t trainable_count() const { return static_cast<std::size_t>(model_->trainable_count()); }
  std::optional<LoraConfig> lora() const {
    return options_.fine_tune == FineTune::kLora ? std::optional(options_.lora) : std::nullopt;
  }
  // The tensors that train, as checkpoints and per-tensor reductions see them.
  const TensorTable& trainable_table() const {
    return model_->lora_layout() ? static_cast<const TensorTable&>(*model_->lora_layout())
                                 : model_->layout();
  }
  void load_initial_state(std::span<float> adam_m, std::span<float> adam_v);
  int64_t tokens_per_step() const { return static_cast<int64_t>(options_.batch) * seq_len_; }
  int64_t tokens_per_rank_step() const { return static_cast<int64_t>(rows_) * seq_len_; }
  double flops_per_step() const {
    return LlamaModel<float>::train_flops(config_, options_.batch, seq_len_, lora());
  }

  // Given; configure() fills in the batch and block defaults.
  TrainOptions options_;
  comm::Communicator& comm_;
  profiler::StallWatchdog& watchdog_;
  std::FILE* out_;
  const int rank_, world_;
  const bool lead_;

  // configure()
  std::optional<CheckpointInfo> resume_;
  ModelConfig config_;
  int threads_ = 1;
  json options_json_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<int64_t> clock_offsets_;  // per rank, for the merged trace

  // load_data()
  DataOptions data_;
  double data_load_s_ = 0;
  std::unique_ptr<BatchSource> source_, val_source_;
  int rows_ = 0, seq_len_ = 0;

  // build_model()
  std::unique_ptr<comm::AllReducer> reducer_;  // before model_: it holds the gradients
  std::optional<LlamaModel<float>> model_;
  // The arena ranges whose AdamW moments this rank holds, in order: the
  // whole arena, or with --zero 1 its slice_of() of every bucket
  // (zero_buckets_); the moments are their concatenation.
  std::vector<comm::TensorRange> zero_buckets_, opt_pieces_;
  kernels::Buffer<float> adam_m_, adam_v_;
  comm::GradSyncStats gather_stats_;  // --zero 1: this step's parameter all-gather
  int64_t start_step_ = 0;
  std::unique_ptr<comm::GradSync> sync_;
  kernels::Buffer<int32_t> inputs_, targets_;
  LrSchedule schedule_;
  kernels::AdamWParams adamw_;
  std::optional<profiler::StepTimer> timer_;
  profiler::TraceRecorder recorder_;
  std::optional<profiler::TraceStream> trace_stream_;  // after recorder_: it reads it

  // train() and after
  std::vector<pid_t> job_on_host_;  // this job's ranks on this rank's host
  profiler::HostLoad load_start_;
  results::RunSummary summary_;
  std::vector<results::StepRecord> steps_;
  RunPeaks peaks_;
  results::CommStats comm_total_;
  profiler::RunTimes run_times_;
  std::vector<json> per_rank_;  // gathered rank_report()s, by rank
};

TrainingRun::TrainingRun(const TrainOptions& options, comm::Communicator& comm,
                         profiler::StallWatchdog& watchdog, std::FILE* out)
    : options_(options),
      comm_(comm),
      watchdog_(watchdog),
      out_(out),
      rank_(comm.rank()),
      world_(comm.size()),
      lead_(rank_ == 0),
      clock_offsets_(world_, 0),
      recorder_(rank_, comm.host()) {
  // This run's peaks, not those of whatever ran before it in the process.
  kernels::reset_peak_memory();
}

void TrainingRun::say(const std::string& text) const {
  if (lead_ && !options_.quiet) {
    std::fputs(text.c_str(), out_);
    std::fflush(out_);
  }
}

// ---- setup ----------------------------------------------------------------------
// Setup runs in stages that end in agreement (run_collectively), so a rank
// that fails alone (a file missing on its host) cannot leave the others
// waiting in a collective, and an error all ranks share is printed once.

void TrainingRun::configure() {
  comm::run_collectively(comm_, [&] {
    choose_model();
    check_options();
    threads_ = options_.threads > 0 ? options_.threads : default_threads_per_rank();
    options_json_ = options_.to_json();
    options_json_["model"] = config_.name;
    if (resume_) check_resume();
    open_tokenizer();
    if (lead_) check_outputs();
  });
  set_threads(threads_);
  agree_across_ranks();
  if (!options_.trace_path.empty() && world_ > 1) measure_clock_offsets();
}

// The checkpoint's model when resuming, else --model; and the batch shape it
// implies where --batch or --block was not given.
void TrainingRun::choose_model() {
  if (!options_.init_from.empty()) {
    if (!options_.resume.empty()) {
      throw Error("--resume continues a run (its weights, optimizer state and step); --init-from "
                  "starts a new run from pretrained weights: give one");
    }
    config_ = read_hf_config(options_.init_from);
  } else if (!options_.resume.empty()) {
    resume_ = find_checkpoint(options_.resume);
    config_ = resume_->config;
    // A LoRA checkpoint holds the adapters; the frozen base is where the run took it from.
    if (resume_->adapters) {
      options_.init_from = resume_->state.value("options", json::object()).value("init_from", "");
    }
  } else {
    config_ = resolve_model(options_.model);
  }
  if (options_.batch == 0) options_.batch = config_.default_batch;
  if (options_.block == 0) options_.block = std::min(config_.default_block, config_.max_seq_len);
}

void TrainingRun::check_options() const {
  const TrainOptions& o = options_;
  if (o.batch < 0) throw Error(fmt::format("--batch must be positive, got {}", o.batch));
  if (o.block < 2) throw Error(fmt::format("--block must be at least 2, got {}", o.block));
  if (o.block > config_.max_seq_len) {
    throw Error(fmt::format("--block {} is larger than the model's max sequence {} ({})", o.block,
                            config_.max_seq_len, config_.name));
  }
  if (o.steps < 0) throw Error(fmt::format("--steps must not be negative, got {}", o.steps));
  if (!(o.lr > 0)) throw Error(fmt::format("--lr must be positive, got {}", o.lr));
  if (o.data.data_mode == DataMode::kNaive && world_ > 1) {
    throw Error(fmt::format("--mode naive runs one process, but this job has {} ranks (use "
                            "duplicated or sharded)",
                            world_));
  }
  if (o.batch % world_ != 0) {
    throw Error(fmt::format("--batch {} is not divisible by the world size {}", o.batch, world_));
  }
  check_zero();
  if (o.fine_tune == FineTune::kLora) o.lora.validate(config_);
  // The emulated bf16 GEMMs (chosen only by tests) need no bf16 instructions.
  if (kernels::bf16_gemm_options().gemm != kernels::Bf16Gemm::kEmulated) {
    check_precision_supported(o.precision, kernels::detect_cpu_isa());
  }
  if (o.min_lr > o.lr) {
    throw Error(fmt::format("--min-lr {} is above --lr {}: the schedule would raise the rate",
                            o.min_lr, o.lr));
  }
}

void TrainingRun::check_zero() const {
  const TrainOptions& o = options_;
  if (o.zero == 0) return;
  if (o.zero != 1) {
    throw Error(fmt::format("--zero must be 0 or 1 (ZeRO stage 2 and 3 are not built), got {}",
                            o.zero));
  }
  if (world_ == 1) {
    throw Error("--zero 1 shards the optimizer state over the ranks, and this job has one rank: "
                "run it under mpirun with 2 or more ranks, or use --zero 0");
  }
  if (o.reduce != comm::ReduceStrategy::kFused) {
    throw Error(fmt::format("--zero 1 reduce-scatters the gradient's --bucket-mb buckets after "
                            "backward, as --reduce fused all-reduces them; got --reduce {}",
                            comm::reduce_strategy_name(o.reduce)));
  }
  if (o.allreduce == comm::AllReduceAlgorithm::kHier) {
    throw Error("--zero 1 with --allreduce hier is not offered: its reduce-scatter would need a "
                "third level; use --allreduce mpi or shm");
  }
}

// Rank 0 writes the outputs: a path that cannot take them fails now, not
// after the run has trained.
void TrainingRun::check_outputs() const {
  if (!options_.summary_path.empty()) check_writable(options_.summary_path, "--summary");
  if (!options_.trace_path.empty()) check_writable(options_.trace_path, "--trace");
  if (!options_.checkpoint_dir.empty()) {
    prepare_checkpoint_dir(options_.checkpoint_dir, resume_.has_value(), options_.overwrite);
  }
}

void TrainingRun::check_resume() const {
  const json saved = resume_->state.value("options", json::object());
  check_resume_compatible(saved, options_json_, resume_->step_dir.string());
  // Without --init-from, a LoRA run's frozen base is the seed's random weights.
  if (resume_->adapters && options_.init_from.empty() && saved.value("seed", options_.seed) != options_.seed) {
    throw Error(fmt::format("--resume: {} adapts the random weights of --seed {}, this run has "
                            "--seed {}",
                            resume_->step_dir.string(), saved["seed"].dump(), options_.seed));
  }
  // The loop would train nothing and still report success.
  if (resume_->step > options_.steps) {
    throw Error(fmt::format("--steps {} is below step {} of checkpoint {}: a resumed run "
                            "continues to --steps in total",
                            options_.steps, resume_->step, resume_->step_dir.string()));
  }
}

void TrainingRun::open_tokenizer() {
  tokenizer_ = make_tokenizer(options_.tokenizer);
  if (tokenizer_->vocab_size() > config_.vocab_size) {
    throw Error(fmt::format("tokenizer {} has {} ids but the model's vocabulary is {} ({}): "
                            "use a model with vocab >= {}",
                            options_.tokenizer, tokenizer_->vocab_size(), config_.vocab_size,
                            config_.name, tokenizer_->vocab_size()));
  }
}

// Ranks started with different flags would issue different collectives and
// hang; a mismatch fails at once on every rank, naming the field and the rank.
void TrainingRun::agree_across_ranks() {
  json agreed = options_json_;
  agreed["model_config"] = to_hf_config(config_);
  agreed["trace"] = !options_.trace_path.empty();  // tracing adds collectives
  comm::run_collectively(comm_, [&] { check_ranks_agree(comm_, agreed); });
}

// Clock offsets for the merged trace, measured now: ranks leave a barrier
// within about one message latency of each other, and each reads its
// monotonic clock; ranks on rank 0's host share that clock exactly (offset 0).
void TrainingRun::measure_clock_offsets() {
  comm_.barrier();
  const std::vector<std::string> clocks =
      comm_.all_gather(std::to_string(profiler::trace_clock_ns()) + " " + comm_.host());
  const int64_t clock0 = std::stoll(clocks[0]);
  const std::string host0 = clocks[0].substr(clocks[0].find(' ') + 1);
  for (int r = 1; r < world_; ++r) {
    const bool same_host = clocks[r].substr(clocks[r].find(' ') + 1) == host0;
    clock_offsets_[r] = same_host ? 0 : std::stoll(clocks[r]) - clock0;
  }
}

void TrainingRun::load_data() {
  data_ = options_.data;
  data_.block = options_.block;
  data_.global_batch = options_.batch;
  data_.world_size = world_;
  data_.rank = rank_;
  const auto start = std::chrono::steady_clock::now();
  comm::run_collectively(comm_, [&] {
    source_ = open_batch_source(data_, *tokenizer_);
    if (options_.eval_every > 0) {
      val_source_ = open_validation_source(data_, *tokenizer_);
      if (!val_source_) {
        throw Error(fmt::format("--eval-every {}: data source {} has no validation split (a "
                                "directory with valid.jsonl, or builtin:stories, has one)",
                                options_.eval_every, data_.source));
      }
    }
  });
  data_load_s_ = seconds_since(start);
  rows_ = source_->rows();
  seq_len_ = source_->seq_len();
  TS_CHECK(rows_ * world_ == options_.batch && seq_len_ == options_.block - 1);
}

void TrainingRun::build_model() {
  const int64_t P = LlamaModel<float>::trainable_count(config_, lora());
  reducer_ = comm::make_all_reducer(comm_, {.algorithm = options_.allreduce,
                                            .dtype = options_.comm_dtype,
                                            .numel = P,
                                            .category = MemoryCategory::kGradients,
                                            .split_ranks_per_host = options_.hier_ranks_per_host});
  model_.emplace(config_, rows_, seq_len_, reducer_->buffer(), lora(), options_.precision);
  // Each rank its own dropout masks, as each has its own rows.
  model_->set_dropout_seed(options_.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(rank_));
  plan_optimizer_pieces(P);
  int64_t held = 0;
  for (const comm::TensorRange& r : opt_pieces_) held += r.numel;
  adam_m_ = kernels::Buffer<float>(held, MemoryCategory::kOptimizerState);
  adam_v_ = kernels::Buffer<float>(held, MemoryCategory::kOptimizerState);
  // Rank 0 reads the whole state; with --zero 1 into temporaries each rank
  // then keeps its pieces of.
  kernels::Buffer<float> full_m, full_v;
  const bool sharded_state = held != P;
  if (resume_ && sharded_state) {
    full_m = kernels::Buffer<float>(P, MemoryCategory::kComm);
    full_v = kernels::Buffer<float>(P, MemoryCategory::kComm);
  }
  kernels::Buffer<float>& load_m = sharded_state && resume_ ? full_m : adam_m_;
  kernels::Buffer<float>& load_v = sharded_state && resume_ ? full_v : adam_v_;
  comm::run_collectively(comm_, [&] {
    if (lead_) load_initial_state(load_m.span(), load_v.span());
  });
  broadcast_initial_state(load_m.span(), load_v.span());
  if (sharded_state && resume_) {
    int64_t at = 0;
    for (const comm::TensorRange& r : opt_pieces_) {
      std::copy_n(full_m.data() + r.offset, r.numel, adam_m_.data() + at);
      std::copy_n(full_v.data() + r.offset, r.numel, adam_v_.data() + at);
      at += r.numel;
    }
  }
  prepare_steps();
}

// Rank 0: the weights (a resumed checkpoint's, pretrained ones or the
// seed's), under LoRA the frozen base that way and the adapters fresh or
// resumed, and a resumed run's optimizer state and step.
void TrainingRun::load_initial_state(std::span<float> adam_m, std::span<float> adam_v) {
  const bool adapters = model_->lora().has_value();
  if (resume_ && !adapters) {
    load_checkpoint_tensors(*resume_, model_->layout(), model_->params(), adam_m, adam_v);
  } else if (!options_.init_from.empty()) {
    load_hf_weights(options_.init_from, model_->layout(), model_->params());
  } else {
    model_->init_weights(options_.seed);
  }
  if (adapters && resume_) {
    load_checkpoint_tensors(*resume_, *model_->lora_layout(), model_->adapters(), adam_m, adam_v);
  } else if (adapters) {
    model_->init_adapters(options_.seed + 1);
  }
  if (resume_) start_step_ = resume_->step;
}

// --zero 1: this rank's slice of every fused bucket (a bucket's slices are
// reduce-scattered and all-gathered as one collective); else the arena.
void TrainingRun::plan_optimizer_pieces(int64_t P) {
  if (options_.zero != 1) {
    opt_pieces_ = {{0, P}};
    return;
  }
  zero_buckets_ = comm::bucket_ranges(P, bucket_bytes());
  for (const comm::TensorRange& b : zero_buckets_) {
    const comm::Slice s = comm::slice_of(b.numel, world_, rank_);
    opt_pieces_.push_back({b.offset + s.offset, s.numel});
  }
}

// Rank 0's weights and state for everyone: identical starts even across
// hosts whose random number libraries differ, and no shared filesystem needed.
void TrainingRun::broadcast_initial_state(std::span<float> adam_m, std::span<float> adam_v) {
  comm_.broadcast(std::as_writable_bytes(model_->params()), 0);
  comm_.broadcast(std::as_writable_bytes(model_->adapters()), 0);
  if (!resume_) return;
  comm_.broadcast(std::as_writable_bytes(adam_m), 0);
  comm_.broadcast(std::as_writable_bytes(adam_v), 0);
  comm_.broadcast(std::as_writable_bytes(std::span<int64_t>(&start_step_, 1)), 0);
}

// What every step uses besides the model: gradient reduction, batch buffers,
// learning rates, AdamW settings and tracing.
void TrainingRun::prepare_steps() {
  std::vector<comm::TensorRange> tensors;
  for (const TensorSpec& t : trainable_table().tensors()) tensors.push_back({t.offset, t.numel});
  sync_ = options_.zero == 1
              ? comm::make_reduce_scatter_sync(*reducer_, bucket_bytes())
              : comm::make_grad_sync(options_.reduce, *reducer_, tensors, bucket_bytes());
  const auto batch_tokens = static_cast<std::size_t>(tokens_per_rank_step());
  inputs_ = kernels::Buffer<int32_t>(batch_tokens, MemoryCategory::kData);
  targets_ = kernels::Buffer<int32_t>(batch_tokens, MemoryCategory::kData);
  schedule_ = {options_.schedule, options_.lr, options_.lr_warmup, options_.steps, options_.min_lr};
  adamw_.beta1 = static_cast<float>(options_.beta1);
  adamw_.beta2 = static_cast<float>(options_.beta2);
  adamw_.eps = static_cast<float>(options_.adam_eps);
  adamw_.weight_decay = static_cast<float>(options_.weight_decay);
  timer_.emplace(profiler::StepTimerOptions{.warmup_steps = options_.warmup_steps});
  timer_->set_live_position(&watchdog_.live_position());
  sync_->set_watchdog(&watchdog_);
  prepare_tracing();
}

// Every rank streams its own trace file as the run goes (rank_trace_path);
// rank 0 writes the merged --trace at the end.
void TrainingRun::prepare_tracing() {
  recorder_.set_enabled(!options_.trace_path.empty());
  if (options_.trace_path.empty()) return;
  timer_->set_trace_recorder(&recorder_);
  sync_->set_trace(&recorder_);
  recorder_.record_memory(profiler::trace_clock_ns(), profiler::tracked_memory());  // the setup's
  comm::run_collectively(comm_, [&] {
    trace_stream_.emplace(recorder_,
                          profiler::TraceStreamOptions{
                              .path = profiler::rank_trace_path(options_.trace_path, rank_),
                              .clock_offset_ns = clock_offsets_[rank_]});
  });
}

// mlx-lm's line, and what trains under LoRA.
std::string TrainingRun::trainable_line() const {
  const double trainable = static_cast<double>(trainable_count());
  const double total = static_cast<double>(param_count() + model_->adapters().size());
  std::string what = "every weight";
  if (const auto l = lora()) {
    what = fmt::format("LoRA rank {} alpha {:g} on {} of {} layer{}", l->rank, l->alpha,
                       lora_targets_list(l->targets),
                       config_.n_layers - l->first_layer(config_),
                       config_.n_layers - l->first_layer(config_) == 1 ? "" : "s");
  }
  return fmt::format("  Trainable parameters: {:.3f}% ({:.3f}M/{:.3f}M): {}\n",
                     100 * trainable / total, trainable / 1e6, total / 1e6, what);
}

void TrainingRun::print_header() const {
  const ModelConfig& c = config_;
  const DataOptions& d = data_;
  say(fmt::format("trainscope train: model {} ({} layers, dims {}, heads {}{}, mlp {}, vocab {}{}; "
                  "{:.2f} M parameters)\n",
                  c.name, c.n_layers, c.dim, c.n_heads,
                  c.kv_heads() == c.n_heads
                      ? std::string()
                      : fmt::format(" sharing {} kv heads", c.kv_heads()),
                  c.mlp_dim, c.vocab_size, c.tie_embeddings ? ", tied embeddings" : "",
                  static_cast<double>(param_count()) / 1e6));
  say(trainable_line());
  say(fmt::format("  data {} ({} split, tokenizer {}, {} batching), global batch {} x block {}, "
                  "{} rank{} x {} thread{}, mode {}{}, reduce {}{}{}{}\n",
                  d.source, d.split, options_.tokenizer, training::to_string(d.mode),
                  options_.batch, options_.block, world_, world_ == 1 ? "" : "s", threads_,
                  threads_ == 1 ? "" : "s", training::to_string(d.data_mode),
                  d.data_mode == DataMode::kSharded
                      ? fmt::format(" ({})", training::to_string(d.shard))
                      : std::string(),
                  comm::reduce_strategy_name(options_.reduce),
                  options_.allreduce == comm::AllReduceAlgorithm::kMpi
                      ? std::string()
                      : fmt::format(" over {}", comm::allreduce_algorithm_name(options_.allreduce)),
                  options_.comm_dtype == comm::CommDtype::kBf16 ? " in bf16" : "",
                  options_.zero == 1 ? ", ZeRO-1 (optimizer state sharded)" : ""));
  say(fmt::format("  {:.1f} GFLOP per step, data loaded in {:.2f} s{}\n", flops_per_step() / 1e9,
                  data_load_s_,
                  resume_ ? fmt::format(", resumed from {} at step {}",
                                        resume_->step_dir.string(), start_step_)
                  : !options_.init_from.empty()
                      ? fmt::format(", weights from {}", options_.init_from)
                      : std::string()));
}

// ---- the loop -------------------------------------------------------------------

void TrainingRun::train() {
  job_on_host_ = ranks_on_this_host();
  load_start_ = profiler::read_host_load(job_on_host_);
  steps_.reserve(static_cast<std::size_t>(std::max<int64_t>(0, options_.steps - start_step_)));
  peaks_.absorb(profiler::tracked_memory());  // the setup's peak
  for (int64_t step = start_step_; step < options_.steps; ++step) {
    if (!run_step(step)) break;
  }
}

// The host's load is the work of everyone but these (and their launcher).
std::vector<pid_t> TrainingRun::ranks_on_this_host() {
  std::vector<pid_t> pids;
  for (const std::string& entry : comm_.all_gather(fmt::format("{} {}", ::getpid(), comm_.host()))) {
    const std::size_t space = entry.find(' ');
    if (entry.substr(space + 1) == comm_.host()) pids.push_back(std::stoi(entry.substr(0, space)));
  }
  return pids;
}

// Returns false when the loss is not finite: the run stops there, failed.
bool TrainingRun::run_step(int64_t step) {
  profiler::reset_peak_memory();
  timer_->begin_step(step);
  const auto start = std::chrono::steady_clock::now();
  StepFigures figures{.step = step};
  const int64_t global_predicted = load_batch(step);
  figures.loss = forward_backward(step, global_predicted);
  if (!std::isfinite(figures.loss)) {
    stop_on_bad_loss(step, figures.loss);
    return false;
  }
  figures.lr = schedule_.at(step);
  figures.grad_norm = optimizer_step(step, figures.lr);
  maybe_evaluate(step);
  maybe_checkpoint(step);
  timer_->end_step();
  figures.seconds = seconds_since(start);
  record_step(figures);
  log_step(figures);
  return true;
}

// Loads this rank's rows of the step's batch. Returns the target positions
// of the whole global batch, the loss's denominator: with --mask-padding
// they are counted, which takes an all-reduce.
int64_t TrainingRun::load_batch(int64_t step) {
  const bool count_predicted = data_.mask_padding || data_.mask_prompt;
  int64_t local_predicted = tokens_per_rank_step();
  {
    auto scope = timer_->phase(Phase::kData);
    source_->batch(step, inputs_.span(), targets_.span());
    if (count_predicted) {
      local_predicted = 0;
      for (int32_t t : targets_) local_predicted += t >= 0 ? 1 : 0;
    }
  }
  if (!count_predicted) return local_predicted * world_;
  auto scope = timer_->phase(Phase::kComm);
  return comm_.all_reduce_sum(local_predicted);
}

// Leaves the gradients summed over ranks (reduced during backward when the
// strategy overlaps) and returns the loss as a mean over the global batch.
double TrainingRun::forward_backward(int64_t step, int64_t global_predicted) {
  // Every rank holds the same (all-reduced) count, so every rank stops here
  // with the same error, said once.
  if (global_predicted == 0) {
    throw comm::CollectiveError(fmt::format("step {}: no target in the global batch is predicted: every one is "
                            "masked{}",
                            step,
                            data_.mask_prompt
                                ? fmt::format(" (--mask-prompt: do the prompts fill --block {}?)",
                                              options_.block)
                                : std::string()));
  }
  ForwardResult fr;
  {
    auto scope = timer_->phase(Phase::kForward);
    inject_delay();
    const double scale = global_predicted > 0 ? 1.0 / static_cast<double>(global_predicted) : 0.0;
    fr = model_->forward(inputs_.data(), targets_.data(), scale);
  }
  {
    auto scope = timer_->phase(Phase::kBackward);
    model_->zero_grad();
    sync_->begin_step(step);
    model_->backward(inputs_.data(), [&](int64_t begin) {
      if (!sync_->overlaps()) return;
      auto comm_scope = timer_->phase(Phase::kComm);
      sync_->on_ready(begin);
    });
  }
  double loss_sum = fr.loss_sum;
  {
    auto scope = timer_->phase(Phase::kComm);
    sync_->finish();
    loss_sum = comm_.all_reduce_sum(loss_sum);
  }
  return global_predicted > 0 ? loss_sum / static_cast<double>(global_predicted) : std::nan("");
}

// --inject-delay: this rank computes that much longer every step.
void TrainingRun::inject_delay() const {
  if (!options_.inject_delay || options_.inject_delay->rank != rank_) return;
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(options_.inject_delay->ms));
}

// Every rank sees the same (all-reduced) loss, so every rank stops here.
void TrainingRun::stop_on_bad_loss(int64_t step, double loss) {
  timer_->end_step();
  summary_.status = results::RunStatus::kFailed;
  summary_.failed_step = step;
  summary_.error = fmt::format("loss is {} at step {}", loss, step);
  say(fmt::format("step {:>5}: loss {} -- stopping: the loss is not finite\n", step, loss));
}

// Clips the gradient to --grad-clip and applies AdamW to the parameters of
// opt_pieces_ (with --zero 1 this rank's pieces, then the parameters are
// all-gathered). Returns the gradient norm before clipping.
double TrainingRun::optimizer_step(int64_t step, double lr) {
  auto scope = timer_->phase(Phase::kOptimizer);
  float* grads = model_->grads().data();
  double grad_norm = 0;
  if (options_.zero != 1) {
    grad_norm = kernels::global_norm(grads, trainable_count());
  } else {
    // The norm over every rank's pieces: one all-reduce of a scalar.
    double squares = 0;
    for (const comm::TensorRange& r : opt_pieces_) {
      const double n = kernels::global_norm(grads + r.offset, static_cast<std::size_t>(r.numel));
      squares += n * n;
    }
    auto comm_scope = timer_->phase(Phase::kComm);
    grad_norm = std::sqrt(comm_.all_reduce_sum(squares));
  }
  const bool clip = options_.grad_clip > 0 && grad_norm > options_.grad_clip;
  adamw_.lr = static_cast<float>(lr);
  int64_t at = 0;  // into the moments
  for (const comm::TensorRange& r : opt_pieces_) {
    const auto n = static_cast<std::size_t>(r.numel);
    if (clip) {
      kernels::scale_inplace(grads + r.offset, n, static_cast<float>(options_.grad_clip / grad_norm));
    }
    kernels::adamw_update(model_->trainable().data() + r.offset, grads + r.offset, adam_m_.data() + at,
                          adam_v_.data() + at, n, adamw_, step + 1);
    at += r.numel;
  }
  if (options_.zero == 1) gather_parameters();
  return grad_norm;
}

// --zero 1: every rank's updated pieces to every rank, a bucket at a time.
void TrainingRun::gather_parameters() {
  auto scope = timer_->phase(Phase::kComm);
  const auto t0 = std::chrono::steady_clock::now();
  for (const comm::TensorRange& b : zero_buckets_) {
    comm_.all_gather(model_->trainable().subspan(b.offset, b.numel));
  }
  gather_stats_ = {.calls = static_cast<int64_t>(zero_buckets_.size()),
                   .bytes = static_cast<int64_t>(model_->trainable().size_bytes()),
                   .comm_s = seconds_since(t0),
                   .exposed_s = seconds_since(t0)};
}

void TrainingRun::maybe_evaluate(int64_t step) {
  if (!val_source_) return;  // only opened when eval_every > 0
  if ((step + 1) % options_.eval_every != 0 && !is_last(step)) return;
  auto scope = timer_->phase(Phase::kEval);
  evaluate(step + 1);
}

// Validation loss over the first --val-batches batches, a mean over all ranks.
void TrainingRun::evaluate(int64_t step) {
  double sums[2] = {0, 0};
  for (int64_t b = 0; b < options_.val_batches; ++b) {
    val_source_->batch(b, inputs_.span(), targets_.span());
    const ForwardResult r = model_->forward(inputs_.data(), targets_.data(), 0.0);
    sums[0] += r.loss_sum;
    sums[1] += static_cast<double>(r.predicted);
  }
  comm_.all_reduce_sum(std::span<double>(sums, 2));
  const double loss = sums[1] > 0 ? sums[0] / sums[1] : std::nan("");
  summary_.val.push_back({step, loss});
  say(fmt::format("  validation at step {}: loss {:.4f} over {} batches\n", step, loss,
                  options_.val_batches));
}

// Rank 0 writes; the barrier keeps the others from running ahead of a slow save.
void TrainingRun::maybe_checkpoint(int64_t step) {
  if (options_.checkpoint_dir.empty()) return;
  const int64_t every = options_.save_every;
  if (!(every > 0 && (step + 1) % every == 0) && !is_last(step)) return;
  auto scope = timer_->phase(Phase::kCheckpoint);
  // --zero 1: the checkpoint holds the whole state, gathered for the save.
  kernels::Buffer<float> full_m, full_v;
  const bool sharded_state = options_.zero == 1;
  if (sharded_state) {
    full_m = gather_state(adam_m_);
    full_v = gather_state(adam_v_);
  }
  if (lead_) {
    json state = {{"options", options_json_}, {"world_size", world_}};
    const std::optional<LoraConfig> adapters = lora();
    save_checkpoint(options_.checkpoint_dir, step + 1, config_, trainable_table(),
                    {.params = model_->trainable(),
                     .adam_m = sharded_state ? full_m.span() : adam_m_.span(),
                     .adam_v = sharded_state ? full_v.span() : adam_v_.span(),
                     .lora = adapters ? &*adapters : nullptr,
                     .base_model = options_.init_from.empty() ? config_.name : options_.init_from},
                    state);
  }
  comm_.barrier();
}

// A whole moment buffer from every rank's pieces of it (--zero 1).
kernels::Buffer<float> TrainingRun::gather_state(const kernels::Buffer<float>& pieces) {
  // Counted as a communication buffer: the sharded state itself stays 1/N.
  kernels::Buffer<float> full(trainable_count(), MemoryCategory::kComm);
  int64_t at = 0;
  for (const comm::TensorRange& r : opt_pieces_) {
    std::copy_n(pieces.data() + at, r.numel, full.data() + r.offset);
    at += r.numel;
  }
  for (const comm::TensorRange& b : zero_buckets_) {
    comm_.all_gather(full.span().subspan(b.offset, b.numel));
  }
  return full;
}

void TrainingRun::record_step(const StepFigures& figures) {
  const profiler::StepTimes& times = timer_->steps().back();
  const kernels::MemorySnapshot memory = profiler::tracked_memory();
  recorder_.record_memory(profiler::trace_clock_ns(), memory);  // when tracing
  peaks_.absorb(memory);
  comm::GradSyncStats stats = sync_->stats();
  stats.calls += gather_stats_.calls;
  stats.bytes += gather_stats_.bytes;
  stats.comm_s += gather_stats_.comm_s;
  stats.exposed_s += gather_stats_.exposed_s;
  steps_.push_back(make_step_record(figures, tokens_per_rank_step(), times, stats, memory));
  comm_total_.calls += stats.calls;
  comm_total_.bytes += stats.bytes;
  comm_total_.time_s += stats.comm_s;
  comm_total_.exposed_s += stats.exposed_s;
}

// Every --log-every steps, and always the first and the last.
void TrainingRun::log_step(const StepFigures& f) const {
  const int64_t every = options_.log_every;
  if (every <= 0) return;
  if ((f.step + 1) % every != 0 && !is_last(f.step) && f.step != start_step_) return;
  const double comm_s = sync_->stats().comm_s;
  say(fmt::format("step {:>5}/{} | loss {:.4f} | lr {:.2e} | {:7.1f} ms | {:8.0f} tok/s | "
                  "{:6.1f} GFLOP/s{}\n",
                  f.step + 1, options_.steps, f.loss, f.lr, f.seconds * 1e3,
                  tokens_per_step() / f.seconds, flops_per_step() / f.seconds / 1e9,
                  world_ > 1 ? fmt::format(" | comm {:.1f} ms", comm_s * 1e3) : std::string()));
}

// ---- totals ---------------------------------------------------------------------

void TrainingRun::gather_totals() {
  run_times_ = timer_->run_times();
  for (const std::string& report : comm_.all_gather(rank_report().dump())) {
    per_rank_.push_back(json::parse(report));
  }
  check_parameters_agree();
  describe_run();
  add_rank_results();
  add_transports();
  add_totals();
}

// What this rank sends to the others at the end: its results and steps, a
// hash of its parameters, its transport settings and its trace.
json TrainingRun::rank_report() {
  json report = {{"result", rank_result()},
                 {"steps", steps_},
                 {"param_hash", params_hash(model_->params()) * 31 + params_hash(model_->adapters())}};
  std::map<std::string, std::string> transport;
  for (auto& [k, v] : comm::transport_settings()) transport[k] = v;
  report["transport"] = transport;
  report["trace"] = options_.trace_path.empty() ? std::string() : recorder_.serialize();
  return report;
}

results::RankResult TrainingRun::rank_result() const {
  const profiler::RunTimes& run = run_times_;
  results::RankResult me;
  me.rank = rank_;
  me.host = comm_.host();
  me.pid = ::getpid();
  me.step_time = to_time_stats(run.wall);
  me.phases = phase_stats(run);
  me.tokens_per_s =
      run.wall.median > 0 ? static_cast<double>(rows_) * seq_len_ / run.wall.median : 0;
  me.tracked_peak_total = peaks_.total;
  me.tracked_peak_by_category.values = peaks_.by_category;
  const profiler::ProcessMemory pm = profiler::self_process_memory(true);
  me.vm_hwm = pm.hwm_bytes;
  me.vm_rss = pm.rss_bytes;
  me.pss = pm.pss_bytes;
  me.data = to_data_stats(source_->stats());
  me.comm = comm_total_;
  me.load_start = load_start_;
  me.load_end = profiler::read_host_load(job_on_host_);
  const kernels::BlasInfo blas = kernels::blas_info();
  me.kernels = {.blas_library = blas.library,
                .blas_core = blas.core,
                .blas_choice = std::string(kernels::blas_choice_name(blas.choice)),
                .blas_best = blas.best,
                .cpu_isa = blas.isa,
                .omp_threads = omp_get_max_threads(),
                .blas_threads = openblas_get_num_threads(),
                .precision = std::string(precision_name(options_.precision)),
                .bf16_gemm = options_.precision == Precision::kBf16
                                 ? kernels::onednn_description()
                                 : std::string()};
  return me;
}

// Data parallelism's promise: every rank ends with rank 0's parameters.
void TrainingRun::check_parameters_agree() const {
  const uint64_t hash0 = per_rank_[0]["param_hash"].get<uint64_t>();
  for (int r = 1; r < world_; ++r) {
    const uint64_t hash = per_rank_[r]["param_hash"].get<uint64_t>();
    if (hash != hash0) {
      throw Error(fmt::format("rank {} ended with parameters different from rank 0's (hash {:016x} "
                              "vs {:016x})",
                              r, hash, hash0),
                  kExitFailure);
    }
  }
}

void TrainingRun::describe_run() {
  summary_.trainscope_version = TRAINSCOPE_VERSION;
  summary_.git_revision = TRAINSCOPE_GIT_REVISION;
  summary_.model = to_hf_config(config_);
  summary_.options = options_json_;
  summary_.world_size = world_;
  summary_.threads_per_rank = threads_;
  summary_.comm_dtype = std::string(comm::comm_dtype_name(options_.comm_dtype));
  summary_.parameters = static_cast<int64_t>(param_count() + model_->adapters().size());
  summary_.trainable_parameters = static_cast<int64_t>(trainable_count());
  summary_.flops_per_step = flops_per_step();
}

void TrainingRun::add_rank_results() {
  for (const json& report : per_rank_) {
    results::RankResult rr = report["result"].get<results::RankResult>();
    if (std::find(summary_.hosts.begin(), summary_.hosts.end(), rr.host) == summary_.hosts.end()) {
      summary_.hosts.push_back(rr.host);
    }
    summary_.ranks.push_back(std::move(rr));
    summary_.steps.push_back(report["steps"].get<std::vector<results::StepRecord>>());
  }
}

// Rank 0's settings, and every rank's only where they differ.
void TrainingRun::add_transports() {
  std::vector<std::map<std::string, std::string>> transports;
  for (const json& report : per_rank_) {
    transports.push_back(report["transport"].get<std::map<std::string, std::string>>());
  }
  summary_.transport = transports[0];
  if (std::any_of(transports.begin(), transports.end(),
                  [&](const auto& t) { return t != transports[0]; })) {
    summary_.transport_per_rank = transports;
  }
}

// The job is as fast as its slowest rank.
void TrainingRun::add_totals() {
  double worst_median = 0, worst_p95 = 0;
  for (const results::RankResult& rr : summary_.ranks) {
    worst_median = std::max(worst_median, rr.step_time.median);
    worst_p95 = std::max(worst_p95, rr.step_time.p95);
  }
  summary_.totals.step_time_median_s = worst_median;
  summary_.totals.step_time_p95_s = worst_p95;
  summary_.totals.tokens_per_s = worst_median > 0 ? tokens_per_step() / worst_median : 0;
}

// ---- output (rank 0) ------------------------------------------------------------

void TrainingRun::write_outputs() {
  trace_stream_.reset();  // its last flush
  if (!lead_) return;
  if (!options_.trace_path.empty()) write_trace();
  if (!options_.quiet && !steps_.empty()) print_report();
  if (!options_.summary_path.empty()) results::save_run_summary(summary_, options_.summary_path);
}

void TrainingRun::write_trace() const {
  std::vector<profiler::RankTrace> traces;
  for (int r = 0; r < world_; ++r) {
    traces.push_back({per_rank_[r]["trace"].get<std::string>(), clock_offsets_[r]});
  }
  profiler::write_merged_chrome_trace(options_.trace_path, traces);
}

void TrainingRun::print_report() const {
  const results::Totals& t = summary_.totals;
  say(fmt::format("\nsummary: {} steps measured (first {} excluded), median step {:.1f} ms, "
                  "p95 {:.1f} ms, {:.0f} tokens/s, {:.1f} GFLOP/s\n",
                  run_times_.measured_steps, run_times_.warmup_steps,
                  t.step_time_median_s * 1e3, t.step_time_p95_s * 1e3, t.tokens_per_s,
                  t.step_time_median_s > 0 ? flops_per_step() / t.step_time_median_s / 1e9
                                           : 0.0));
  say(memory_table(summary_.ranks));
  say(phase_table(summary_.ranks));
  if (world_ > 1) say(straggler_table(results::run_figures(&summary_, {})));
}

}  // namespace

int default_threads_per_rank() {
  cpu_set_t set;
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cores = CPU_COUNT(&set);
  int local_ranks = 1;
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"}) {
    if (const char* v = std::getenv(var)) {
      local_ranks = std::max(1, std::atoi(v));
      break;
    }
  }
  return threads_per_rank(cores, local_ranks,
                          static_cast<int>(std::thread::hardware_concurrency()));
}

int threads_per_rank(int cores, int local_ranks, int hardware_threads) {
  // Bound to fewer cores than its share (mpirun --bind-to core): use what it has.
  return std::max(1, std::min(cores, hardware_threads / std::max(1, local_ranks)));
}

namespace {

// With --status-dir (made here; the ranks agree on whether they could), the
// watchdog keeps this rank's status file current.
profiler::StallWatchdogOptions watchdog_options(const TrainOptions& options,
                                                comm::Communicator& comm) {
  profiler::StallWatchdogOptions watch;
  watch.rank = comm.rank();
  watch.host = comm.host();
  watch.timeout_s = options.stall_timeout_s;
  if (options.status_dir.empty()) return watch;
  comm::run_collectively(comm, [&] {
    std::error_code ec;
    std::filesystem::create_directories(options.status_dir, ec);
    if (ec) throw Error(fmt::format("--status-dir {}: {}", options.status_dir, ec.message()));
  });
  watch.on_status = [path = results::rank_status_path(options.status_dir, comm.rank())](
                        const profiler::RankStatus& status) {
    results::save_rank_status(status, path);
  };
  return watch;
}

}  // namespace

results::RunSummary run_training(const TrainOptions& options, comm::Communicator& comm,
                                 std::FILE* out) {
  profiler::StallWatchdog watchdog(watchdog_options(options, comm));
  comm::WatchedCommunicator watched(comm, watchdog);
  TrainingRun run(options, watched, watchdog, out);
  watchdog.set_stage("configure");
  run.configure();
  watchdog.set_stage("load_data");
  run.load_data();
  watchdog.set_stage("build_model");
  run.build_model();
  run.print_header();
  watchdog.set_stage("train");
  run.train();
  watchdog.set_stage("gather_totals");
  run.gather_totals();
  watchdog.set_stage("write_outputs");
  run.write_outputs();
  watchdog.set_stage("finished");
  return run.take_summary();
}

}  // namespace trainscope::training
