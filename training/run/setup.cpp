#include "training/tokenizers/make_tokenizer.h"
#include "training/run/setup.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "kernels/cpu_isa.h"
#include "kernels/gemm_backend.h"
#include "kernels/matmul_bf16.h"
#include "kernels/thread_count.h"
#include "profiler/clock.h"
#include "profiler/memory_tracker.h"
#include "training/hf_checkpoint.h"
#include "training/data/pipeline.h"
#include "training/threads.h"

namespace trainscope::training {
namespace {

using kernels::MemoryCategory;
using nlohmann::json;

int64_t bucket_bytes(const options::TrainOptions& o) {
  return static_cast<int64_t>(o.bucket_mb * 1024 * 1024);
}

// ---- configure_run ----------------------------------------------------------------

// The checkpoint's model when resuming, else --model; and the batch shape it
// implies where --batch or --block was not given.
void choose_model(options::TrainOptions& options, RunPlan& plan) {
  if (!options.init_from.empty()) {
    if (!options.resume.empty()) {
      throw Error(
          "--resume continues a run (its weights, optimizer state and step); --init-from "
          "starts a new run from pretrained weights: give one");
    }
    plan.config = read_hf_config(options.init_from);
  } else if (!options.resume.empty()) {
    plan.resume = find_checkpoint(options.resume);
    plan.config = plan.resume->config;
    const json saved = plan.resume->state.value("options", json::object());
    // A LoRA checkpoint holds the adapters; the frozen base is where the run took it from.
    if (plan.resume->adapters) options.init_from = saved.value("init_from", "");
    // The run goes on saving where it saved, as often, unless told otherwise.
    if (options.checkpoint_dir.empty()) {
      options.checkpoint_dir = plan.resume->step_dir.parent_path().string();
    }
    if (options.save_every == 0) options.save_every = saved.value("save_every", int64_t{0});
  } else {
    plan.config = resolve_model(options.model);
  }
  if (options.batch == 0) options.batch = plan.config.default_batch;
  if (options.block == 0) {
    options.block = std::min(plan.config.default_block, plan.config.max_seq_len);
  }
}

void check_zero(const options::TrainOptions& o, int world) {
  if (o.zero == 0) return;
  if (o.zero != 1) {
    throw Error(
        fmt::format("--zero must be 0 or 1 (ZeRO stage 2 and 3 are not built), got {}", o.zero));
  }
  if (world == 1) {
    throw Error(
        "--zero 1 shards the optimizer state over the ranks, and this job has one rank: "
        "run it under mpirun with 2 or more ranks, or use --zero 0");
  }
  if (o.reduce != options::ReduceStrategy::kFused) {
    throw Error(
        fmt::format("--zero 1 reduce-scatters the gradient's --bucket-mb buckets after "
                    "backward, as --reduce fused all-reduces them; got --reduce {}",
                    enum_name(o.reduce)));
  }
  if (o.allreduce == options::AllReduceAlgorithm::kHier) {
    throw Error(
        "--zero 1 with --allreduce hier is not offered: its reduce-scatter would need a "
        "third level; use --allreduce mpi or shm");
  }
}

void check_options(const options::TrainOptions& o, const ModelConfig& config, int world) {
  if (o.save_every > 0 && o.checkpoint_dir.empty()) {
    throw Error(
        fmt::format("--save-every {} saves checkpoints, but there is no --checkpoint-dir "
                    "to save them in",
                    o.save_every));
  }
  if (o.batch < 0) throw Error(fmt::format("--batch must be positive, got {}", o.batch));
  if (o.block < 2) throw Error(fmt::format("--block must be at least 2, got {}", o.block));
  if (o.block > config.max_seq_len) {
    throw Error(fmt::format("--block {} is larger than the model's max sequence {} ({})", o.block,
                            config.max_seq_len, config.name));
  }
  if (o.steps < 0) throw Error(fmt::format("--steps must not be negative, got {}", o.steps));
  if (!(o.lr > 0)) throw Error(fmt::format("--lr must be positive, got {}", o.lr));
  if (o.data.data_mode == options::DataMode::kNaive && world > 1) {
    throw Error(
        fmt::format("--mode naive runs one process, but this job has {} ranks (use "
                    "duplicated or sharded)",
                    world));
  }
  if (o.batch % world != 0) {
    throw Error(fmt::format("--batch {} is not divisible by the world size {}", o.batch, world));
  }
  check_zero(o, world);
  if (o.fine_tune == options::FineTune::kLora) validate_lora(o.lora, config);
  // The emulated bf16 GEMMs (chosen only by tests) need no bf16 instructions.
  if (kernels::bf16_gemm_options().gemm != kernels::Bf16Gemm::kEmulated) {
    check_precision_supported(o.precision, kernels::detect_cpu_isa());
  }
  if (o.min_lr > o.lr) {
    throw Error(fmt::format("--min-lr {} is above --lr {}: the schedule would raise the rate",
                            o.min_lr, o.lr));
  }
}

// Rank 0 writes the outputs: a path that cannot take them fails now, not
// after the run has trained.
void check_outputs(const options::TrainOptions& o, bool resuming) {
  if (!o.summary_path.empty()) check_writable(o.summary_path, "--summary");
  if (!o.trace_path.empty()) check_writable(o.trace_path, "--trace");
  if (!o.checkpoint_dir.empty()) prepare_checkpoint_dir(o.checkpoint_dir, resuming, o.overwrite);
}

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
    if (saved.contains("data") && saved["data"].contains(key) &&
        saved["data"][key] != now["data"][key]) {
      throw Error(fmt::format("--resume: {} was saved with data {} = {}, this run has {}", where,
                              key, saved["data"][key].dump(), now["data"][key].dump()));
    }
  }
}

void check_resume(const options::TrainOptions& options, const RunPlan& plan) {
  const CheckpointInfo& resume = *plan.resume;
  const json saved = resume.state.value("options", json::object());
  check_resume_compatible(saved, plan.options_json, resume.step_dir.string());
  // Without --init-from, a LoRA run's frozen base is the seed's random weights.
  if (resume.adapters && options.init_from.empty() &&
      saved.value("seed", options.seed) != options.seed) {
    throw Error(
        fmt::format("--resume: {} adapts the random weights of --seed {}, this run has "
                    "--seed {}",
                    resume.step_dir.string(), saved["seed"].dump(), options.seed));
  }
  // The loop would train nothing and still report success.
  if (resume.step > options.steps) {
    throw Error(
        fmt::format("--steps {} is below step {} of checkpoint {}: a resumed run "
                    "continues to --steps in total",
                    options.steps, resume.step, resume.step_dir.string()));
  }
}

std::unique_ptr<Tokenizer> open_tokenizer(const std::string& spec, const ModelConfig& config) {
  std::unique_ptr<Tokenizer> tokenizer = make_tokenizer(spec);
  if (tokenizer->vocab_size() > config.vocab_size) {
    throw Error(fmt::format(
        "tokenizer {} has {} ids but the model's vocabulary is {} ({}): "
        "use a model with vocab >= {}",
        spec, tokenizer->vocab_size(), config.vocab_size, config.name, tokenizer->vocab_size()));
  }
  return tokenizer;
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
    throw Error(
        fmt::format("ranks disagree on the configuration: field '{}' is {} on rank 0 but "
                    "{} on rank {}",
                    path, a, b, r));
  }
}

// Ranks started with different flags would issue different collectives and
// hang; a mismatch fails at once on every rank, naming the field and the rank.
void agree_across_ranks(const RunContext& ctx, const RunPlan& plan) {
  json agreed = plan.options_json;
  agreed["model_config"] = to_hf_config(plan.config);
  agreed["trace"] = !ctx.options.trace_path.empty();  // tracing adds collectives
  comm::run_collectively(ctx.comm, [&] { check_ranks_agree(ctx.comm, agreed); });
}

// Clock offsets for the merged trace, measured now: ranks leave a barrier
// within about one message latency of each other, and each reads its
// monotonic clock; ranks on rank 0's host share that clock exactly (offset 0).
void measure_clock_offsets(comm::Communicator& comm, std::vector<int64_t>& offsets) {
  comm.barrier();
  const std::vector<std::string> clocks =
      comm.all_gather(std::to_string(profiler::trace_clock_ns()) + " " + comm.host());
  const int64_t clock0 = std::stoll(clocks[0]);
  const std::string host0 = clocks[0].substr(clocks[0].find(' ') + 1);
  for (int r = 1; r < comm.size(); ++r) {
    const bool same_host = clocks[r].substr(clocks[r].find(' ') + 1) == host0;
    offsets[r] = same_host ? 0 : std::stoll(clocks[r]) - clock0;
  }
}

// ---- build_training_state ---------------------------------------------------------

// --zero 1: this rank's slice of every fused bucket (a bucket's slices are
// reduce-scattered and all-gathered as one collective); else the arena.
void plan_optimizer_pieces(const RunContext& ctx, int64_t P, TrainingState& state) {
  if (ctx.options.zero != 1) {
    state.opt_pieces = {{0, P}};
    return;
  }
  state.zero_buckets = comm::bucket_ranges(P, bucket_bytes(ctx.options));
  for (const comm::TensorRange& b : state.zero_buckets) {
    const comm::Slice s = comm::slice_of(b.numel, ctx.world, ctx.rank);
    state.opt_pieces.push_back({b.offset + s.offset, s.numel});
  }
}

// Rank 0: the weights (a resumed checkpoint's, pretrained ones or the
// seed's), under LoRA the frozen base that way and the adapters fresh or
// resumed, and a resumed run's optimizer state and step.
void load_initial_state(const options::TrainOptions& options,
                        const std::optional<CheckpointInfo>& resume, TrainingState& state,
                        std::span<float> adam_m, std::span<float> adam_v) {
  LlamaModel<float>& model = *state.model;
  const bool adapters = model.lora().has_value();
  if (resume && !adapters) {
    load_checkpoint_tensors(*resume, model.layout(), model.params(), adam_m, adam_v);
  } else if (!options.init_from.empty()) {
    load_hf_weights(options.init_from, model.layout(), model.params());
  } else {
    model.init_weights(options.seed);
  }
  if (adapters && resume) {
    load_checkpoint_tensors(*resume, *model.lora_layout(), model.adapters(), adam_m, adam_v);
  } else if (adapters) {
    model.init_adapters(options.seed + 1);
  }
  if (resume) state.start_step = resume->step;
}

// Rank 0's weights and state for everyone: identical starts even across
// hosts whose random number libraries differ, and no shared filesystem needed.
void broadcast_initial_state(comm::Communicator& comm, bool resuming, TrainingState& state,
                             std::span<float> adam_m, std::span<float> adam_v) {
  comm.broadcast(std::as_writable_bytes(state.model->params()), 0);
  comm.broadcast(std::as_writable_bytes(state.model->adapters()), 0);
  if (!resuming) return;
  comm.broadcast(std::as_writable_bytes(adam_m), 0);
  comm.broadcast(std::as_writable_bytes(adam_v), 0);
  comm.broadcast(std::as_writable_bytes(std::span<int64_t>(&state.start_step, 1)), 0);
}

// This rank's moments, and the initial state loaded on rank 0 and broadcast.
// With --zero 1 a resumed state is read whole into temporaries, of which each
// rank then keeps its pieces.
void init_optimizer_state(const RunContext& ctx, const RunPlan& plan, int64_t P,
                          TrainingState& state) {
  int64_t held = 0;
  for (const comm::TensorRange& r : state.opt_pieces) held += r.numel;
  state.adam_m = kernels::Buffer<float>(held, MemoryCategory::kOptimizerState);
  state.adam_v = kernels::Buffer<float>(held, MemoryCategory::kOptimizerState);
  kernels::Buffer<float> full_m, full_v;
  const bool whole_in_temporaries = held != P && plan.resume;
  if (whole_in_temporaries) {
    full_m = kernels::Buffer<float>(P, MemoryCategory::kComm);
    full_v = kernels::Buffer<float>(P, MemoryCategory::kComm);
  }
  kernels::Buffer<float>& load_m = whole_in_temporaries ? full_m : state.adam_m;
  kernels::Buffer<float>& load_v = whole_in_temporaries ? full_v : state.adam_v;
  comm::run_collectively(ctx.comm, [&] {
    if (ctx.lead) load_initial_state(ctx.options, plan.resume, state, load_m.span(), load_v.span());
  });
  broadcast_initial_state(ctx.comm, plan.resume.has_value(), state, load_m.span(), load_v.span());
  if (!whole_in_temporaries) return;
  int64_t at = 0;
  for (const comm::TensorRange& r : state.opt_pieces) {
    std::copy_n(full_m.data() + r.offset, r.numel, state.adam_m.data() + at);
    std::copy_n(full_v.data() + r.offset, r.numel, state.adam_v.data() + at);
    at += r.numel;
  }
}

// Every rank streams its own trace file as the run goes (rank_trace_path);
// rank 0 writes the merged --trace at the end.
void prepare_tracing(const RunContext& ctx, const RunPlan& plan, TrainingState& state) {
  const std::string& trace_path = ctx.options.trace_path;
  state.recorder.set_enabled(!trace_path.empty());
  if (trace_path.empty()) return;
  state.timer->set_trace_recorder(&state.recorder);
  state.sync->set_trace(&state.recorder);
  state.recorder.record_memory(profiler::trace_clock_ns(), profiler::tracked_memory());  // setup's
  comm::run_collectively(ctx.comm, [&] {
    state.trace_stream.emplace(
        state.recorder,
        profiler::TraceStreamOptions{.path = profiler::rank_trace_path(trace_path, ctx.rank),
                                     .clock_offset_ns = plan.clock_offsets[ctx.rank]});
  });
}

// What every step uses besides the model: gradient reduction, batch buffers,
// learning rates, AdamW settings and tracing.
void prepare_steps(const RunContext& ctx, const RunPlan& plan, const TrainingData& data,
                   profiler::StallWatchdog& watchdog, TrainingState& state) {
  const options::TrainOptions& o = ctx.options;
  std::vector<comm::TensorRange> tensors;
  for (const TensorSpec& t : state.trainable_table().tensors()) {
    tensors.push_back({t.offset, t.numel});
  }
  const int64_t bucket = bucket_bytes(o);
  state.sync = o.zero == 1 ? comm::make_reduce_scatter_sync(*state.reducer, bucket)
                           : comm::make_grad_sync(o.reduce, *state.reducer, tensors, bucket);
  const auto batch_tokens = static_cast<std::size_t>(data.tokens_per_rank_step());
  state.inputs = kernels::Buffer<int32_t>(batch_tokens, MemoryCategory::kData);
  state.targets = kernels::Buffer<int32_t>(batch_tokens, MemoryCategory::kData);
  state.schedule = {o.schedule, o.lr, o.lr_warmup, o.steps, o.min_lr};
  state.adamw.beta1 = static_cast<float>(o.beta1);
  state.adamw.beta2 = static_cast<float>(o.beta2);
  state.adamw.eps = static_cast<float>(o.adam_eps);
  state.adamw.weight_decay = static_cast<float>(o.weight_decay);
  state.timer.emplace(profiler::StepTimerOptions{.warmup_steps = o.warmup_steps});
  state.timer->set_live_position(&watchdog.live_position());
  state.work_counter = profiler::make_work_counter(ctx.rank);  // under the work lane's callgrind
  state.timer->set_work_counter(state.work_counter.get());
  state.sync->set_watchdog(&watchdog);
  prepare_tracing(ctx, plan, state);
}

// ---- print_run_header ----------------------------------------------------------------

// mlx-lm's line, and what trains under LoRA.
std::string trainable_line(const RunContext& ctx, const ModelConfig& c,
                           const TrainingState& state) {
  const double trainable = static_cast<double>(state.trainable_count());
  const double total = static_cast<double>(state.param_count() + state.model->adapters().size());
  std::string what = "every weight";
  if (const auto l = ctx.lora()) {
    what = fmt::format("LoRA rank {} alpha {:g} on {} of {} layer{}", l->rank, l->alpha,
                       options::lora_targets_list(l->targets), c.n_layers - lora_first_layer(*l, c),
                       c.n_layers - lora_first_layer(*l, c) == 1 ? "" : "s");
  }
  return fmt::format("  Trainable parameters: {:.3f}% ({:.3f}M/{:.3f}M): {}\n",
                     100 * trainable / total, trainable / 1e6, total / 1e6, what);
}

// The data, the batch and how the ranks share the work.
std::string data_line(const RunContext& ctx, const RunPlan& plan, const options::DataOptions& d) {
  const options::TrainOptions& o = ctx.options;
  const int world = ctx.world;
  return fmt::format(
      "  data {} ({} split, tokenizer {}, {} batching), global batch {} x block {}, "
      "{} rank{} x {} thread{}, mode {}{}, reduce {}{}{}{}\n",
      d.source, d.split, o.tokenizer, enum_name(d.mode), o.batch, o.block, world,
      world == 1 ? "" : "s", plan.threads, plan.threads == 1 ? "" : "s", enum_name(d.data_mode),
      d.data_mode == options::DataMode::kSharded ? fmt::format(" ({})", enum_name(d.shard))
                                                 : std::string(),
      enum_name(o.reduce),
      o.allreduce == options::AllReduceAlgorithm::kMpi
          ? std::string()
          : fmt::format(" over {}", enum_name(o.allreduce)),
      o.comm_dtype == options::CommDtype::kBf16 ? " in bf16" : "",
      o.zero == 1 ? ", ZeRO-1 (optimizer state sharded)" : "");
}

}  // namespace

RunPlan configure_run(RunContext& ctx) {
  RunPlan plan;
  plan.clock_offsets.assign(static_cast<std::size_t>(ctx.world), 0);
  options::TrainOptions& o = ctx.options;
  comm::run_collectively(ctx.comm, [&] {
    choose_model(o, plan);
    check_options(o, plan.config, ctx.world);
    plan.threads = o.threads > 0 ? o.threads : default_threads_per_rank();
    plan.options_json = o.to_json();
    plan.options_json["model"] = plan.config.name;
    // Absolute, so that a resume from another directory finds the weights.
    if (!o.init_from.empty()) {
      plan.options_json["init_from"] = std::filesystem::absolute(o.init_from).lexically_normal();
    }
    if (plan.resume) check_resume(o, plan);
    plan.tokenizer = open_tokenizer(o.tokenizer, plan.config);
    if (ctx.lead) check_outputs(o, plan.resume.has_value());
  });
  kernels::set_compute_threads(plan.threads);
  kernels::set_gemm_backend(o.gemm);
  agree_across_ranks(ctx, plan);
  if (!o.trace_path.empty() && ctx.world > 1) measure_clock_offsets(ctx.comm, plan.clock_offsets);
  return plan;
}

TrainingData load_run_data(const RunContext& ctx, const RunPlan& plan) {
  TrainingData data;
  data.options = ctx.options.data;
  data.options.block = ctx.options.block;
  data.options.global_batch = ctx.options.batch;
  data.options.world_size = ctx.world;
  data.options.rank = ctx.rank;
  const auto start = std::chrono::steady_clock::now();
  comm::run_collectively(ctx.comm, [&] {
    data.source = open_batch_source(data.options, *plan.tokenizer);
    if (ctx.options.eval_every > 0) {
      data.val_source = open_validation_source(data.options, *plan.tokenizer);
      if (!data.val_source) {
        throw Error(
            fmt::format("--eval-every {}: data source {} has no validation split (a "
                        "directory with valid.jsonl, or builtin:stories, has one)",
                        ctx.options.eval_every, data.options.source));
      }
    }
  });
  data.load_s = profiler::seconds_since(start);
  data.rows = data.source->rows();
  data.seq_len = data.source->seq_len();
  TS_CHECK(data.rows * ctx.world == ctx.options.batch && data.seq_len == ctx.options.block - 1);
  return data;
}

void build_training_state(const RunContext& ctx, const RunPlan& plan, const TrainingData& data,
                          profiler::StallWatchdog& watchdog, TrainingState& state) {
  const options::TrainOptions& o = ctx.options;
  const std::optional<LoraConfig> lora = ctx.lora();
  const int64_t P = LlamaModel<float>::trainable_count(plan.config, lora);
  state.reducer = comm::make_all_reducer(ctx.comm, {.algorithm = o.allreduce,
                                                    .dtype = o.comm_dtype,
                                                    .numel = P,
                                                    .category = MemoryCategory::kGradients,
                                                    .split_ranks_per_host = o.hier_ranks_per_host});
  state.model.emplace(plan.config, data.rows, data.seq_len, state.reducer->buffer(), lora,
                      o.precision);
  // Each rank its own dropout masks, as each has its own rows.
  state.model->set_dropout_seed(o.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(ctx.rank));
  state.flops_per_step = LlamaModel<float>::train_flops(plan.config, o.batch, data.seq_len, lora);
  plan_optimizer_pieces(ctx, P, state);
  init_optimizer_state(ctx, plan, P, state);
  prepare_steps(ctx, plan, data, watchdog, state);
}

void print_run_header(const RunContext& ctx, const RunPlan& plan, const TrainingData& data,
                      const TrainingState& state) {
  const ModelConfig& c = plan.config;
  ctx.say(fmt::format(
      "trainscope train: model {} ({} layers, dims {}, heads {}{}, mlp {}, vocab {}{}; "
      "{:.2f} M parameters)\n",
      c.name, c.n_layers, c.dim, c.n_heads,
      c.kv_heads() == c.n_heads ? std::string() : fmt::format(" sharing {} kv heads", c.kv_heads()),
      c.mlp_dim, c.vocab_size, c.tie_embeddings ? ", tied embeddings" : "",
      static_cast<double>(state.param_count()) / 1e6));
  ctx.say(trainable_line(ctx, c, state));
  ctx.say(data_line(ctx, plan, data.options));
  const std::string& init_from = ctx.options.init_from;
  ctx.say(fmt::format("  {:.1f} GFLOP per step, data loaded in {:.2f} s{}\n",
                      state.flops_per_step / 1e9, data.load_s,
                      plan.resume          ? fmt::format(", resumed from {} at step {}",
                                                         plan.resume->step_dir.string(), state.start_step)
                      : !init_from.empty() ? fmt::format(", weights from {}", init_from)
                                           : std::string()));
}

}  // namespace trainscope::training
