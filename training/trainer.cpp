#include "training/trainer.h"

#include <cblas.h>
#include <fmt/format.h>
#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kernels/adamw.h"
#include "kernels/check.h"
#include "profiler/memory_tracker.h"
#include "profiler/stats.h"
#include "profiler/step_timer.h"
#include "profiler/trace.h"
#include "training/checkpoint.h"
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
// The only code here that knows the members of results::PhaseTimes,
// PhaseStats and MemoryByCategory.

results::TimeStats to_time_stats(const profiler::Summary& s) {
  return {s.mean, s.median, s.p95, s.min, s.max};
}

// Phases as the step records report them: each without the phases nested in
// it (backward without the comm it overlaps), except comm, which is whole.
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
  rec.phases = {times.exclusive(Phase::kData),      times.exclusive(Phase::kForward),
                times.exclusive(Phase::kBackward),  times.seconds(Phase::kComm),
                times.exclusive(Phase::kOptimizer), times.exclusive(Phase::kEval),
                times.exclusive(Phase::kCheckpoint)};
  rec.comm_calls = comm_stats.calls;
  rec.comm_bytes = comm_stats.bytes;
  rec.comm_exposed_s = comm_stats.exposed_s;
  rec.mem_active = memory.total.active;
  rec.mem_peak = memory.total.peak;
  return rec;
}

// Over the measured steps, with comm inclusive as in make_step_record.
results::PhaseStats phase_stats(const profiler::RunTimes& run) {
  auto stats = [&](Phase p, bool inclusive) {
    return to_time_stats(inclusive ? run[p].inclusive : run[p].exclusive);
  };
  return {stats(Phase::kData, false),      stats(Phase::kForward, false),
          stats(Phase::kBackward, false),  stats(Phase::kComm, true),
          stats(Phase::kOptimizer, false), stats(Phase::kEval, false),
          stats(Phase::kCheckpoint, false)};
}

void fill_memory(results::MemoryByCategory* m,
                 const std::array<int64_t, kernels::kNumMemoryCategories>& peaks) {
  m->parameters = peaks[0];
  m->gradients = peaks[1];
  m->optimizer_state = peaks[2];
  m->activations = peaks[3];
  m->data = peaks[4];
  m->comm = peaks[5];
  m->workspace = peaks[6];
  m->other = peaks[7];
}

results::DataStats to_data_stats(const DataStats& ds) {
  return {ds.examples_held, ds.tokens_held, ds.bytes_held, ds.bytes_read};
}

// The final tables, one row per rank.
std::string memory_table(const std::vector<results::RankResult>& ranks) {
  using kernels::format_bytes;
  std::string table =
      "\ntracked peak memory by category, and process peak resident memory (VmHWM):\n";
  table += fmt::format("{:>4} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}\n",
                       "rank", "params", "grads", "optimizer", "activation", "data", "comm",
                       "workspace", "tracked", "VmHWM");
  for (const results::RankResult& rr : ranks) {
    const results::MemoryByCategory& m = rr.tracked_peak_by_category;
    table += fmt::format("{:>4} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}\n",
                         rr.rank, format_bytes(m.parameters), format_bytes(m.gradients),
                         format_bytes(m.optimizer_state), format_bytes(m.activations),
                         format_bytes(m.data), format_bytes(m.comm), format_bytes(m.workspace),
                         format_bytes(rr.tracked_peak_total), format_bytes(rr.vm_hwm));
  }
  return table;
}

std::string phase_table(const std::vector<results::RankResult>& ranks) {
  std::string table =
      "\nmedian time per step by phase (ms; comm includes time overlapped with backward):\n";
  table += fmt::format("{:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "rank", "data",
                       "forward", "backward", "comm", "optimizer", "eval", "ckpt", "step");
  for (const results::RankResult& rr : ranks) {
    const results::PhaseStats& p = rr.phases;
    table += fmt::format("{:>4} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} "
                         "{:>9.1f}\n",
                         rr.rank, p.data.median * 1e3, p.forward.median * 1e3,
                         p.backward.median * 1e3, p.comm.median * 1e3, p.optimizer.median * 1e3,
                         p.eval.median * 1e3, p.checkpoint.median * 1e3,
                         rr.step_time.median * 1e3);
  }
  return table;
}

// Options that must match a checkpoint for a resume to continue the same run.
void check_resume_compatible(const json& saved, const json& now, const std::string& where) {
  for (const char* key : {"batch", "block", "tokenizer"}) {
    if (saved.contains(key) && saved[key] != now[key]) {
      throw Error(fmt::format("--resume: {} was saved with {} = {}, this run has {}", where, key,
                              saved[key].dump(), now[key].dump()));
    }
  }
  // Everything that decides which documents and tokens make the batches.
  for (const char* key : {"source", "split", "text_field", "delimiter", "one_per_line", "seed",
                          "shuffle", "batching", "mask_padding"}) {
    if (saved.contains("data") && saved["data"].contains(key) && saved["data"][key] != now["data"][key]) {
      throw Error(fmt::format("--resume: {} was saved with data {} = {}, this run has {}", where,
                              key, saved["data"][key].dump(), now["data"][key].dump()));
    }
  }
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
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  // Bound to fewer cores than its share (mpirun --bind-to core): use what it has.
  return std::max(1, std::min(cores, hw / local_ranks));
}

json TrainOptions::to_json() const {
  return {
      {"model", model},
      {"batch", batch},
      {"block", block},
      {"steps", steps},
      {"lr", lr},
      {"schedule", lr_schedule_name(schedule)},
      {"lr_warmup", lr_warmup},
      {"min_lr", min_lr},
      {"weight_decay", weight_decay},
      {"beta1", beta1},
      {"beta2", beta2},
      {"adam_eps", adam_eps},
      {"grad_clip", grad_clip},
      {"seed", seed},
      {"warmup_steps", warmup_steps},
      {"tokenizer", tokenizer},
      {"eval_every", eval_every},
      {"val_batches", val_batches},
      {"mode", training::to_string(data.data_mode)},
      {"shard", training::to_string(data.shard)},
      {"reduce", comm::reduce_strategy_name(reduce)},
      {"bucket_mb", bucket_mb},
      {"data",
       {{"source", data.source},
        {"split", data.split},
        {"text_field", data.text_field},
        {"delimiter", data.delimiter},
        {"one_per_line", data.one_per_line},
        {"skip_bad_records", data.skip_bad_records},
        {"max_record_bytes", data.max_record_bytes},
        {"batching", training::to_string(data.mode)},
        {"mask_padding", data.mask_padding},
        {"seed", data.seed},
        {"shuffle", data.shuffle}}},
  };
}

results::RunSummary run_training(const TrainOptions& opt, comm::Communicator& comm,
                                 std::FILE* out) {
  const int rank = comm.rank(), world = comm.size();
  const bool lead = rank == 0;
  auto say = [&](const std::string& s) {
    if (lead && !opt.quiet) {
      std::fputs(s.c_str(), out);
      std::fflush(out);
    }
  };

  // ---- configuration --------------------------------------------------------
  // Setup runs in stages that end in agreement (run_collectively), so a rank
  // that fails alone (a file missing on its host) cannot leave the others
  // waiting in a collective, and an error all ranks share is printed once.
  std::optional<CheckpointInfo> resume;
  ModelConfig config;
  TrainOptions o = opt;
  int threads = 1;
  json options_json;
  std::unique_ptr<Tokenizer> tokenizer;
  comm::run_collectively(comm, [&] {
    if (!opt.resume.empty()) {
      resume = find_checkpoint(opt.resume);
      config = resume->config;
    } else {
      config = resolve_model(opt.model);
    }
    if (o.batch == 0) o.batch = config.default_batch;
    if (o.block == 0) o.block = std::min(config.default_block, config.max_seq_len);
    if (o.batch < 0) throw Error(fmt::format("--batch must be positive, got {}", o.batch));
    if (o.block < 2) throw Error(fmt::format("--block must be at least 2, got {}", o.block));
    if (o.block > config.max_seq_len) {
      throw Error(fmt::format("--block {} is larger than the model's max sequence {} ({})",
                              o.block, config.max_seq_len, config.name));
    }
    if (o.steps < 0) throw Error(fmt::format("--steps must not be negative, got {}", o.steps));
    if (!(o.lr > 0)) throw Error(fmt::format("--lr must be positive, got {}", o.lr));
    if (o.data.data_mode == DataMode::kNaive && world > 1) {
      throw Error(fmt::format("--mode naive runs one process, but this job has {} ranks (use "
                              "duplicated or sharded)",
                              world));
    }
    if (o.batch % world != 0) {
      throw Error(fmt::format("--batch {} is not divisible by the world size {}", o.batch, world));
    }
    threads = o.threads > 0 ? o.threads : default_threads_per_rank();
    options_json = o.to_json();
    options_json["model"] = config.name;
    if (resume) {
      check_resume_compatible(resume->state.value("options", json::object()), options_json,
                              resume->step_dir.string());
      // The loop would train nothing and still report success.
      if (resume->step > o.steps) {
        throw Error(fmt::format("--steps {} is below step {} of checkpoint {}: a resumed run "
                                "continues to --steps in total",
                                o.steps, resume->step, resume->step_dir.string()));
      }
    }
    tokenizer = make_tokenizer(o.tokenizer);
    if (tokenizer->vocab_size() > config.vocab_size) {
      throw Error(fmt::format("tokenizer {} has {} ids but the model's vocabulary is {} ({}): "
                              "use a model with vocab >= {}",
                              o.tokenizer, tokenizer->vocab_size(), config.vocab_size,
                              config.name, tokenizer->vocab_size()));
    }
  });
  set_threads(threads);
  {
    json agreed = options_json;
    agreed["model_config"] = to_hf_config(config);
    agreed["trace"] = !o.trace_path.empty();  // tracing adds collectives
    comm::run_collectively(comm, [&] { check_ranks_agree(comm, agreed); });
  }
  // Clock offsets for the merged trace, measured now: ranks leave a barrier
  // within about one message latency of each other, and each reads its
  // monotonic clock; ranks on rank 0's host share that clock exactly (offset 0).
  std::vector<int64_t> clock_offsets(world, 0);
  if (!o.trace_path.empty() && world > 1) {
    comm.barrier();
    const std::vector<std::string> clocks =
        comm.all_gather(std::to_string(profiler::trace_clock_ns()) + " " + comm.host());
    const int64_t clock0 = std::stoll(clocks[0]);
    const std::string host0 = clocks[0].substr(clocks[0].find(' ') + 1);
    for (int r = 1; r < world; ++r) {
      const bool same_host = clocks[r].substr(clocks[r].find(' ') + 1) == host0;
      clock_offsets[r] = same_host ? 0 : std::stoll(clocks[r]) - clock0;
    }
  }

  // ---- data -----------------------------------------------------------------
  DataOptions d = o.data;
  d.block = o.block;
  d.global_batch = o.batch;
  d.world_size = world;
  d.rank = rank;
  const auto t_data0 = std::chrono::steady_clock::now();
  std::unique_ptr<BatchSource> source, val_source;
  comm::run_collectively(comm, [&] {
    source = open_batch_source(d, *tokenizer);
    if (o.eval_every > 0) val_source = open_validation_source(d, *tokenizer);
  });
  const double data_load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_data0).count();
  const int rows = source->rows(), T = source->seq_len();
  TS_CHECK(rows * world == o.batch && T == o.block - 1);

  // ---- model, optimizer, reduction -------------------------------------------
  LlamaModel<float> model(config, rows, T);
  const ParamLayout& layout = model.layout();
  const std::size_t P = static_cast<std::size_t>(layout.total());
  kernels::Buffer<float> adam_m(P, MemoryCategory::kOptimizerState);
  kernels::Buffer<float> adam_v(P, MemoryCategory::kOptimizerState);
  int64_t start_step = 0;
  comm::run_collectively(comm, [&] {
    if (!lead) return;
    if (resume) {
      load_checkpoint_tensors(*resume, layout, model.params(), adam_m.span(), adam_v.span());
      start_step = resume->step;
    } else {
      model.init_weights(o.seed);
    }
  });
  // Rank 0's weights and state for everyone: identical starts even across
  // hosts whose random number libraries differ, and no shared filesystem needed.
  comm.broadcast(std::as_writable_bytes(model.params()), 0);
  if (resume) {
    comm.broadcast(std::as_writable_bytes(adam_m.span()), 0);
    comm.broadcast(std::as_writable_bytes(adam_v.span()), 0);
    comm.broadcast(std::as_writable_bytes(std::span<int64_t>(&start_step, 1)), 0);
  }

  std::vector<comm::TensorRange> tensors;
  for (const TensorSpec& t : layout.tensors()) tensors.push_back({t.offset, t.numel});
  const int64_t bucket_bytes = static_cast<int64_t>(o.bucket_mb * 1024 * 1024);
  auto sync = comm::make_grad_sync(o.reduce, comm, model.grads(), tensors, bucket_bytes);

  kernels::Buffer<int32_t> inputs(static_cast<std::size_t>(rows) * T, MemoryCategory::kData);
  kernels::Buffer<int32_t> targets(static_cast<std::size_t>(rows) * T, MemoryCategory::kData);

  LrSchedule schedule{o.schedule, o.lr, o.lr_warmup, o.steps, o.min_lr};
  kernels::AdamWParams hp;
  hp.beta1 = static_cast<float>(o.beta1);
  hp.beta2 = static_cast<float>(o.beta2);
  hp.eps = static_cast<float>(o.adam_eps);
  hp.weight_decay = static_cast<float>(o.weight_decay);

  profiler::StepTimer timer({.warmup_steps = o.warmup_steps});
  profiler::TraceRecorder recorder(rank, comm.host());
  recorder.set_enabled(!o.trace_path.empty());
  if (!o.trace_path.empty()) {
    timer.set_trace_recorder(&recorder);
    sync->set_trace(&recorder);
  }

  const double flops_per_step = LlamaModel<float>::train_flops(config, o.batch, T);
  const int64_t tokens_per_step = static_cast<int64_t>(o.batch) * T;
  say(fmt::format("trainscope train: model {} ({} layers, dims {}, heads {}, mlp {}, vocab {}; "
                  "{:.2f} M parameters)\n",
                  config.name, config.n_layers, config.dim, config.n_heads, config.mlp_dim,
                  config.vocab_size, static_cast<double>(P) / 1e6));
  say(fmt::format("  data {} ({} split, tokenizer {}, {} batching), global batch {} x block {}, "
                  "{} rank{} x {} thread{}, mode {}{}, reduce {}\n",
                  d.source, d.split, o.tokenizer, training::to_string(d.mode), o.batch, o.block,
                  world, world == 1 ? "" : "s", threads, threads == 1 ? "" : "s",
                  training::to_string(d.data_mode),
                  d.data_mode == DataMode::kSharded
                      ? fmt::format(" ({})", training::to_string(d.shard))
                      : std::string(),
                  comm::reduce_strategy_name(o.reduce)));
  say(fmt::format("  {:.1f} GFLOP per step, data loaded in {:.2f} s{}\n", flops_per_step / 1e9,
                  data_load_s,
                  resume ? fmt::format(", resumed from {} at step {}", resume->step_dir.string(),
                                       start_step)
                         : std::string()));

  // ---- the loop ---------------------------------------------------------------
  results::RunSummary summary;
  summary.trainscope_version = TRAINSCOPE_VERSION;
  summary.git_revision = TRAINSCOPE_GIT_REVISION;
  summary.model = to_hf_config(config);
  summary.options = options_json;
  summary.world_size = world;
  summary.threads_per_rank = threads;

  std::vector<results::StepRecord> steps;
  steps.reserve(static_cast<std::size_t>(std::max<int64_t>(0, o.steps - start_step)));
  std::array<int64_t, kernels::kNumMemoryCategories> run_peak{};
  int64_t run_peak_total = 0;
  // Peaks are reset every step (so each step records its own); the run's
  // peak is the max over the setup and every step.
  auto absorb_peaks = [&](const kernels::MemorySnapshot& s) {
    for (int c = 0; c < kernels::kNumMemoryCategories; ++c) {
      run_peak[c] = std::max(run_peak[c], s.by_category[c].peak);
    }
    run_peak_total = std::max(run_peak_total, s.total.peak);
  };
  absorb_peaks(profiler::tracked_memory());
  results::CommStats comm_total;

  const bool count_predicted = d.mask_padding;
  auto evaluate = [&](int64_t step) {
    double sums[2] = {0, 0};
    for (int64_t b = 0; b < o.val_batches; ++b) {
      val_source->batch(b, inputs.span(), targets.span());
      const ForwardResult r = model.forward(inputs.data(), targets.data(), 0.0);
      sums[0] += r.loss_sum;
      sums[1] += static_cast<double>(r.predicted);
    }
    comm.all_reduce_sum(std::span<double>(sums, 2));
    const double loss = sums[1] > 0 ? sums[0] / sums[1] : std::nan("");
    summary.val.push_back({step, loss});
    say(fmt::format("  validation at step {}: loss {:.4f} over {} batches\n", step, loss,
                    o.val_batches));
  };

  for (int64_t step = start_step; step < o.steps; ++step) {
    profiler::reset_peak_memory();
    timer.begin_step(step);
    const auto t0 = std::chrono::steady_clock::now();
    int64_t local_predicted = static_cast<int64_t>(rows) * T;
    {
      auto scope = timer.phase(Phase::kData);
      source->batch(step, inputs.span(), targets.span());
      if (count_predicted) {
        local_predicted = 0;
        for (int32_t t : targets) local_predicted += t >= 0 ? 1 : 0;
      }
    }
    int64_t global_predicted = local_predicted * world;
    if (count_predicted) {
      auto scope = timer.phase(Phase::kComm);
      global_predicted = comm.all_reduce_sum(local_predicted);
    }
    ForwardResult fr;
    {
      auto scope = timer.phase(Phase::kForward);
      const double scale = global_predicted > 0 ? 1.0 / static_cast<double>(global_predicted) : 0.0;
      fr = model.forward(inputs.data(), targets.data(), scale);
    }
    {
      auto scope = timer.phase(Phase::kBackward);
      model.zero_grad();
      sync->begin_step(step);
      model.backward(inputs.data(), [&](int64_t begin) {
        if (!sync->overlaps()) return;
        auto comm_scope = timer.phase(Phase::kComm);
        sync->on_ready(begin);
      });
    }
    double loss_sum = fr.loss_sum;
    {
      auto scope = timer.phase(Phase::kComm);
      sync->finish();
      loss_sum = comm.all_reduce_sum(loss_sum);
    }
    const double loss = global_predicted > 0 ? loss_sum / static_cast<double>(global_predicted)
                                             : std::nan("");
    if (!std::isfinite(loss)) {
      timer.end_step();
      summary.status = results::RunStatus::kFailed;
      summary.failed_step = step;
      summary.error = fmt::format("loss is {} at step {}", loss, step);
      say(fmt::format("step {:>5}: loss {} -- stopping: the loss is not finite\n", step, loss));
      break;
    }
    double grad_norm = 0;
    const double lr = schedule.at(step);
    {
      auto scope = timer.phase(Phase::kOptimizer);
      grad_norm = kernels::global_norm(model.grads().data(), P);
      if (o.grad_clip > 0 && grad_norm > o.grad_clip) {
        kernels::scale_inplace(model.grads().data(), P, static_cast<float>(o.grad_clip / grad_norm));
      }
      hp.lr = static_cast<float>(lr);
      kernels::adamw_update(model.params().data(), model.grads().data(), adam_m.data(),
                            adam_v.data(), P, hp, step + 1);
    }
    const bool last = step + 1 == o.steps;
    if (val_source && (((step + 1) % o.eval_every == 0) || last)) {
      auto scope = timer.phase(Phase::kEval);
      evaluate(step + 1);
    }
    if (!o.checkpoint_dir.empty() &&
        ((o.save_every > 0 && (step + 1) % o.save_every == 0) || last)) {
      auto scope = timer.phase(Phase::kCheckpoint);
      if (lead) {
        json state = {{"options", options_json}, {"world_size", world}};
        save_checkpoint(o.checkpoint_dir, step + 1, config, layout,
                        {model.params(), adam_m.span(), adam_v.span()}, state);
      }
      comm.barrier();
    }
    timer.end_step();
    const double step_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const profiler::StepTimes& times = timer.steps().back();
    const kernels::MemorySnapshot mem = profiler::tracked_memory();
    absorb_peaks(mem);

    const comm::GradSyncStats& cs = sync->stats();
    const StepFigures figures{step, loss, lr, grad_norm, step_s};
    steps.push_back(make_step_record(figures, static_cast<int64_t>(rows) * T, times, cs, mem));
    comm_total.calls += cs.calls;
    comm_total.bytes += cs.bytes;
    comm_total.time_s += cs.comm_s;
    comm_total.exposed_s += cs.exposed_s;

    if (o.log_every > 0 && ((step + 1) % o.log_every == 0 || last || step == start_step)) {
      say(fmt::format("step {:>5}/{} | loss {:.4f} | lr {:.2e} | {:7.1f} ms | {:8.0f} tok/s | "
                      "{:6.1f} GFLOP/s{}\n",
                      step + 1, o.steps, loss, lr, step_s * 1e3, tokens_per_step / step_s,
                      flops_per_step / step_s / 1e9,
                      world > 1 ? fmt::format(" | comm {:.1f} ms", cs.comm_s * 1e3)
                                : std::string()));
    }
  }

  // ---- per-rank results, gathered --------------------------------------------
  const profiler::RunTimes run = timer.run_times();
  results::RankResult me;
  me.rank = rank;
  me.host = comm.host();
  me.pid = ::getpid();
  me.step_time = to_time_stats(run.wall);
  me.phases = phase_stats(run);
  me.tokens_per_s = run.wall.median > 0 ? static_cast<double>(rows) * T / run.wall.median : 0;
  me.tracked_peak_total = run_peak_total;
  fill_memory(&me.tracked_peak_by_category, run_peak);
  const profiler::ProcessMemory pm = profiler::self_process_memory(true);
  me.vm_hwm = pm.hwm_bytes;
  me.vm_rss = pm.rss_bytes;
  me.pss = pm.pss_bytes;
  me.data = to_data_stats(source->stats());
  me.comm = comm_total;

  json mine = {{"result", me}, {"steps", steps}, {"param_hash", params_hash(model.params())}};
  std::map<std::string, std::string> transport;
  for (auto& [k, v] : comm::transport_settings()) transport[k] = v;
  mine["transport"] = transport;
  mine["trace"] = o.trace_path.empty() ? std::string() : recorder.serialize();
  const std::vector<std::string> gathered = comm.all_gather(mine.dump());

  std::vector<json> per_rank;
  for (const std::string& g : gathered) per_rank.push_back(json::parse(g));
  const uint64_t hash0 = per_rank[0]["param_hash"].get<uint64_t>();
  for (int r = 1; r < world; ++r) {
    if (per_rank[r]["param_hash"].get<uint64_t>() != hash0) {
      throw Error(fmt::format("rank {} ended with parameters different from rank 0's (hash {:016x} "
                              "vs {:016x})",
                              r, per_rank[r]["param_hash"].get<uint64_t>(), hash0),
                  kExitFailure);
    }
  }
  double worst_median = 0, worst_p95 = 0;
  std::vector<std::map<std::string, std::string>> transports;
  for (int r = 0; r < world; ++r) {
    results::RankResult rr = per_rank[r]["result"].get<results::RankResult>();
    worst_median = std::max(worst_median, rr.step_time.median);
    worst_p95 = std::max(worst_p95, rr.step_time.p95);
    summary.ranks.push_back(rr);
    summary.steps.push_back(per_rank[r]["steps"].get<std::vector<results::StepRecord>>());
    if (std::find(summary.hosts.begin(), summary.hosts.end(), rr.host) == summary.hosts.end()) {
      summary.hosts.push_back(rr.host);
    }
    transports.push_back(per_rank[r]["transport"].get<std::map<std::string, std::string>>());
  }
  summary.transport = transports[0];
  if (std::any_of(transports.begin(), transports.end(),
                  [&](const auto& t) { return t != transports[0]; })) {
    summary.transport_per_rank = transports;
  }
  summary.totals.step_time_median_s = worst_median;
  summary.totals.step_time_p95_s = worst_p95;
  summary.totals.tokens_per_s = worst_median > 0 ? tokens_per_step / worst_median : 0;

  if (lead && !o.trace_path.empty()) {
    std::vector<profiler::RankTrace> traces;
    for (int r = 0; r < world; ++r) {
      traces.push_back({per_rank[r]["trace"].get<std::string>(), clock_offsets[r]});
    }
    profiler::write_merged_chrome_trace(o.trace_path, traces);
  }

  // ---- final report (rank 0) -----------------------------------------------------
  if (lead && !o.quiet && !steps.empty()) {
    say(fmt::format("\nsummary: {} steps measured (first {} excluded), median step {:.1f} ms, "
                    "p95 {:.1f} ms, {:.0f} tokens/s, {:.1f} GFLOP/s\n",
                    run.measured_steps, run.warmup_steps, worst_median * 1e3, worst_p95 * 1e3,
                    summary.totals.tokens_per_s,
                    worst_median > 0 ? flops_per_step / worst_median / 1e9 : 0.0));
    say(memory_table(summary.ranks));
    say(phase_table(summary.ranks));
  }
  if (lead && !o.summary_path.empty()) results::save_run_summary(summary, o.summary_path);
  return summary;
}

}  // namespace trainscope::training
