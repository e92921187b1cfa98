#include "training/run/step.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "base/check.h"
#include "kernels/adamw.h"
#include "profiler/clock.h"
#include "profiler/memory_tracker.h"
#include "results/environment.h"
#include "training/run/milestones.h"
#include "training/run/replay.h"

namespace trainscope::training {
namespace {

using profiler::Phase;

// What one step computed, beside what the profiler measured of it.
struct StepFigures {
  int64_t step = 0;
  double loss = 0;
  double lr = 0;
  double grad_norm = 0;
  double seconds = 0;  // wall time of the whole step
};

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

// The host's load is the work of everyone but these (and their launcher).
// The job's ranks on this rank's machine: the virtual hosts of one cluster
// share it under their own host names, and their ranks are the job's load,
// not other processes' (profiler::machine_id; the host without one).
std::vector<pid_t> ranks_on_this_machine(comm::Communicator& comm) {
  std::string machine = profiler::machine_id();
  if (machine.empty()) machine = "host " + comm.host();
  std::vector<pid_t> pids;
  for (const std::string& entry : comm.all_gather(fmt::format("{} {}", ::getpid(), machine))) {
    const std::size_t space = entry.find(' ');
    if (entry.substr(space + 1) == machine) pids.push_back(std::stoi(entry.substr(0, space)));
  }
  return pids;
}

// One step after another, each a screen of phases.
class StepRunner {
 public:
  StepRunner(const RunContext& ctx, const RunPlan& plan, const TrainingData& data,
             TrainingState& state, results::RunSummary& summary, StepLog& log)
      : ctx_(ctx),
        data_(data),
        state_(state),
        summary_(summary),
        log_(log),
        milestones_(ctx, plan, data.val_source.get(), state, summary.val) {
    allocate_planted_work();
    if (!(ctx.options.replay_time_scale >= 1)) {
      throw Error(
          fmt::format("--replay-time-scale {}: must be at least 1", ctx.options.replay_time_scale));
    }
    if (ctx.options.replay_time_scale != 1 && ctx.options.replay_compute.empty()) {
      throw Error("--replay-time-scale: only with --replay-compute (it slows replayed compute)");
    }
    if (!ctx.options.replay_compute.empty()) {
      if (ctx.options.zero == 1) throw Error("--replay-compute: not with --zero 1");
      replay_ = ComputeReplay::load(ctx.options.replay_compute, state.trainable_count(), ctx.rank,
                                    ctx.options.replay_time_scale);
    }
  }

  // Returns false when the loss is not finite: the run stops there, failed.
  bool run_step(int64_t step);

 private:
  int64_t load_batch(int64_t step);
  double forward_backward(int64_t step, int64_t global_predicted);
  double replay_forward_backward(int64_t step, int64_t global_predicted);
  void inject_delay() const;
  void plant_slowdown(double trained_s) const;
  void allocate_planted_work();
  void plant_work(const float* grads, int64_t step, float grad_scale);
  void stop_on_bad_loss(int64_t step, double loss);
  double optimizer_step(int64_t step, double lr);
  void gather_parameters();
  void record_step(const StepFigures& figures);
  void log_step(const StepFigures& figures) const;

  profiler::StepTimer& timer() const { return *state_.timer; }

  const RunContext& ctx_;
  const TrainingData& data_;
  TrainingState& state_;
  results::RunSummary& summary_;
  StepLog& log_;
  Milestones milestones_;
  double slowdown_pct_ = results::planted_slowdown_pct();  // TRAINSCOPE_SLOWDOWN
  double work_pct_ = results::planted_work_pct();          // TRAINSCOPE_PLANT_WORK
  kernels::Buffer<float> work_params_, work_m_, work_v_;   // its scratch
  double head_backward_s_ = 0;              // this step's head gradient GEMMs (StepRecord)
  comm::GradSyncStats gather_stats_;        // --zero 1: this step's parameter all-gather
  std::optional<ComputeReplay> replay_;     // --replay-compute
  const ReplayedStep* replayed_ = nullptr;  // what this step replays, with it
  ReplayClock replay_clock_;
  std::vector<double> ready_s_;  // this step's backward moments
  std::vector<int64_t> ready_at_;
};

bool StepRunner::run_step(int64_t step) {
  profiler::reset_peak_memory();
  timer().begin_step(step);
  const auto start = std::chrono::steady_clock::now();
  replayed_ = replay_ ? &replay_->step_for(ctx_.rank, step) : nullptr;
  ready_s_.clear();
  ready_at_.clear();
  StepFigures figures{.step = step};
  const int64_t global_predicted = load_batch(step);
  figures.loss = forward_backward(step, global_predicted);
  if (!std::isfinite(figures.loss)) {
    stop_on_bad_loss(step, figures.loss);
    return false;
  }
  figures.lr = state_.schedule.at(step);
  figures.grad_norm = optimizer_step(step, figures.lr);
  const double trained_s = profiler::seconds_since(start);
  milestones_.maybe_evaluate(step);
  milestones_.maybe_checkpoint(step);
  plant_slowdown(trained_s);
  timer().end_step();
  figures.seconds = profiler::seconds_since(start);
  record_step(figures);
  log_step(figures);
  return true;
}

// Loads this rank's rows of the step's batch. Returns the target positions
// of the whole global batch, the loss's denominator: with --mask-padding
// they are counted, which takes an all-reduce.
int64_t StepRunner::load_batch(int64_t step) {
  const bool count_predicted = data_.options.mask_padding || data_.options.mask_prompt;
  int64_t local_predicted = data_.tokens_per_rank_step();
  if (replayed_) {  // no batch: nothing computes with it
    auto scope = timer().phase(Phase::kData);
    replay_clock_.restart();
    replay_clock_.wait(replayed_->data_s);
    return local_predicted * ctx_.world;
  }
  {
    auto scope = timer().phase(Phase::kData);
    data_.source->batch(step, state_.inputs.span(), state_.targets.span());
    if (count_predicted) {
      local_predicted = 0;
      for (int32_t t : state_.targets) local_predicted += t >= 0 ? 1 : 0;
    }
  }
  if (!count_predicted) return local_predicted * ctx_.world;
  auto scope = timer().phase(Phase::kComm);
  return ctx_.comm.all_reduce_sum(local_predicted);
}

// Leaves the gradients summed over ranks (reduced during backward when the
// strategy overlaps) and returns the loss as a mean over the global batch.
double StepRunner::forward_backward(int64_t step, int64_t global_predicted) {
  // Every rank holds the same (all-reduced) count, so every rank stops here
  // with the same error, said once.
  if (global_predicted == 0) {
    throw comm::CollectiveError(fmt::format(
        "step {}: no target in the global batch is predicted: every one is masked{}", step,
        data_.options.mask_prompt
            ? fmt::format(" (--mask-prompt: do the prompts fill --block {}?)", ctx_.options.block)
            : std::string()));
  }
  if (replayed_) return replay_forward_backward(step, global_predicted);
  LlamaModel<float>& model = *state_.model;
  comm::GradSync& sync = *state_.sync;
  ForwardResult fr;
  {
    auto scope = timer().phase(Phase::kForward);
    inject_delay();
    const double scale = global_predicted > 0 ? 1.0 / static_cast<double>(global_predicted) : 0.0;
    // Before forward: the fused head leaves its weight gradient there.
    model.zero_grad();
    // The head's gradient GEMMs run in forward's pass but are backward's
    // work: booked to backward, so that forward and backward mean what they
    // say (issue 37), and timed apart for the overlap's window.
    head_backward_s_ = 0;
    model.set_head_backward_scope([this](const std::function<void()>& backward_work) {
      auto backward = timer().phase(Phase::kBackward);
      const auto t0 = std::chrono::steady_clock::now();
      backward_work();
      head_backward_s_ += profiler::seconds_since(t0);
    });
    fr = model.forward(state_.inputs.data(), state_.targets.data(), scale);
    model.set_head_backward_scope(nullptr);
  }
  {
    auto scope = timer().phase(Phase::kBackward);
    sync.begin_step(step);
    const auto backward_start = std::chrono::steady_clock::now();
    model.backward(state_.inputs.data(), [&](int64_t begin) {
      ready_s_.push_back(profiler::seconds_since(backward_start));
      ready_at_.push_back(begin);
      if (!sync.overlaps()) return;
      auto comm_scope = timer().phase(Phase::kComm);
      sync.on_ready(begin);
    });
  }
  double loss_sum = fr.loss_sum;
  {
    auto scope = timer().phase(Phase::kComm);
    sync.finish();
    loss_sum = ctx_.comm.all_reduce_sum(loss_sum);
  }
  return global_predicted > 0 ? loss_sum / static_cast<double>(global_predicted) : std::nan("");
}

// The measured step's compute as sleeps (training/run/replay.h), the
// gradient ranges handed on at its moments, the reduction and the loss's
// all-reduce for real.
double StepRunner::replay_forward_backward(int64_t step, int64_t global_predicted) {
  const ReplayedStep& r = *replayed_;
  comm::GradSync& sync = *state_.sync;
  {
    auto scope = timer().phase(Phase::kForward);
    inject_delay();
    // A straggler's delay is its own: not absorbed by the plan.
    if (ctx_.options.inject_delay && ctx_.options.inject_delay->rank == ctx_.rank) {
      replay_clock_.restart();
    }
    replay_clock_.wait(r.forward_s);
    // The head's gradient GEMMs, in forward's pass and booked to backward.
    auto head = timer().phase(Phase::kBackward);
    replay_clock_.wait(r.head_backward_s);
    head_backward_s_ = r.head_backward_s;
  }
  {
    auto scope = timer().phase(Phase::kBackward);
    sync.begin_step(step);
    const auto start = replay_clock_.planned();
    double replayed = 0;  // of the measured backward, from its start
    for (std::size_t i = 0; i < r.ready_s.size(); ++i) {
      replay_clock_.wait(std::max(0.0, r.ready_s[i] - replayed));
      replayed = r.ready_s[i];
      ready_s_.push_back(profiler::seconds_since(start));
      ready_at_.push_back(r.ready_at[i]);
      if (!sync.overlaps()) continue;
      // Booked to comm, so backward's compute still lasts the measured time
      // after it (the plan absorbed it, and backward came out short: the
      // replay test's flake on a capped CPU).
      auto comm_scope = timer().phase(Phase::kComm);
      const auto t0 = std::chrono::steady_clock::now();
      sync.on_ready(r.ready_at[i]);
      replay_clock_.defer(profiler::seconds_since(t0));
    }
    replay_clock_.wait(std::max(0.0, r.backward_s - r.head_backward_s - replayed));
  }
  const double predicted = static_cast<double>(global_predicted);
  double loss_sum = r.loss * predicted / ctx_.world;
  {
    auto scope = timer().phase(Phase::kComm);
    sync.finish();
    loss_sum = ctx_.comm.all_reduce_sum(loss_sum);
  }
  return loss_sum / predicted;
}

// --inject-delay: this rank computes that much longer every step.
void StepRunner::inject_delay() const {
  const std::optional<options::InjectedDelay>& delay = ctx_.options.inject_delay;
  if (!delay || delay->rank != ctx_.rank) return;
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(delay->ms));
}

// TRAINSCOPE_SLOWDOWN=PCT (results/environment.h): every step made PCT%
// of its training (`trained_s`, data through optimizer: not an eval or
// checkpoint, which only some steps have) longer, at its end,
// where no collective is in flight: every rank adds the same, so the case's
// step time grows by PCT% whatever share of it computes or waits. A
// busy-wait, not a sleep: a sleeping rank would free its core for the
// others.
void StepRunner::plant_slowdown(double trained_s) const {
  if (slowdown_pct_ <= 0) return;
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(trained_s * slowdown_pct_ / 100));
  while (std::chrono::steady_clock::now() < until) {}
}

// Every rank sees the same (all-reduced) loss, so every rank stops here.
void StepRunner::stop_on_bad_loss(int64_t step, double loss) {
  timer().end_step();
  summary_.status = results::RunStatus::kFailed;
  summary_.failed_step = step;
  summary_.error = fmt::format("loss is {} at step {}", loss, step);
  ctx_.say(fmt::format("step {:>5}: loss {} -- stopping: the loss is not finite\n", step, loss));
}

// Clips the gradient to --grad-clip and applies AdamW to the parameters of
// opt_pieces (with --zero 1 this rank's pieces, then the parameters are
// all-gathered). Returns the gradient norm before clipping.
double StepRunner::optimizer_step(int64_t step, double lr) {
  auto scope = timer().phase(Phase::kOptimizer);
  if (replayed_) {
    replay_clock_.restart();  // after the reduction, whose time is real
    replay_clock_.wait(replayed_->optimizer_s);
    return replayed_->grad_norm;
  }
  const options::TrainOptions& o = ctx_.options;
  float* grads = state_.model->grads().data();
  double grad_norm = 0;
  if (o.zero != 1) {
    grad_norm = kernels::global_norm(grads, state_.trainable_count());
  } else {
    // The norm over every rank's pieces: one all-reduce of a scalar.
    double squares = 0;
    for (const comm::TensorRange& r : state_.opt_pieces) {
      const double n = kernels::global_norm(grads + r.offset, static_cast<std::size_t>(r.numel));
      squares += n * n;
    }
    auto comm_scope = timer().phase(Phase::kComm);
    grad_norm = std::sqrt(ctx_.comm.all_reduce_sum(squares));
  }
  const bool clip = o.grad_clip > 0 && grad_norm > o.grad_clip;
  // Clipping scales the gradients inside AdamW's pass; the gradients
  // themselves stay unclipped (zero_grad clears them before they are read again).
  const float grad_scale = clip ? static_cast<float>(o.grad_clip / grad_norm) : 1.0f;
  state_.adamw.lr = static_cast<float>(lr);
  float* params = state_.model->trainable().data();
  int64_t at = 0;  // into the moments
  for (const comm::TensorRange& r : state_.opt_pieces) {
    const auto n = static_cast<std::size_t>(r.numel);
    kernels::adamw_update(params + r.offset, grads + r.offset, state_.adam_m.data() + at,
                          state_.adam_v.data() + at, n, state_.adamw, step + 1, grad_scale);
    at += r.numel;
  }
  plant_work(grads, step, grad_scale);
  if (o.zero == 1) gather_parameters();
  return grad_norm;
}

// TRAINSCOPE_PLANT_WORK=PCT (results/environment.h): the optimizer's two
// passes again over PCT% of the gradients, into scratch: work that the
// work lane must see and name (its phase), while the run trains the same.
void StepRunner::allocate_planted_work() {
  if (work_pct_ <= 0) return;
  const auto n = static_cast<std::size_t>(
      std::ceil(static_cast<double>(state_.trainable_count()) * std::min(work_pct_, 100.0) / 100));
  work_params_ = kernels::Buffer<float>(n, kernels::MemoryCategory::kWorkspace);
  work_m_ = kernels::Buffer<float>(n, kernels::MemoryCategory::kWorkspace);
  work_v_ = kernels::Buffer<float>(n, kernels::MemoryCategory::kWorkspace);
}

void StepRunner::plant_work(const float* grads, int64_t step, float grad_scale) {
  if (work_params_.size() == 0) return;
  const std::size_t n = work_params_.size();
  (void)kernels::global_norm(grads, n);  // another translation unit's: not elided
  kernels::adamw_update(work_params_.data(), grads, work_m_.data(), work_v_.data(), n, state_.adamw,
                        step + 1, grad_scale);
}

// --zero 1: every rank's updated pieces to every rank, a bucket at a time.
void StepRunner::gather_parameters() {
  auto scope = timer().phase(Phase::kComm);
  const auto t0 = std::chrono::steady_clock::now();
  for (const comm::TensorRange& b : state_.zero_buckets) {
    ctx_.comm.all_gather(state_.model->trainable().subspan(b.offset, b.numel));
  }
  gather_stats_ = {.calls = static_cast<int64_t>(state_.zero_buckets.size()),
                   .bytes = static_cast<int64_t>(state_.model->trainable().size_bytes()),
                   .comm_s = profiler::seconds_since(t0),
                   .exposed_s = profiler::seconds_since(t0)};
}

void StepRunner::record_step(const StepFigures& figures) {
  const profiler::StepTimes& times = timer().steps().back();
  const kernels::MemorySnapshot memory = profiler::tracked_memory();
  state_.recorder.record_memory(profiler::trace_clock_ns(), memory);  // when tracing
  log_.peaks.absorb(memory);
  comm::GradSyncStats stats = state_.sync->stats();
  stats.calls += gather_stats_.calls;
  stats.bytes += gather_stats_.bytes;
  stats.comm_s += gather_stats_.comm_s;
  stats.exposed_s += gather_stats_.exposed_s;
  log_.steps.push_back(
      make_step_record(figures, data_.tokens_per_rank_step(), times, stats, memory));
  log_.steps.back().head_backward_s = head_backward_s_;
  log_.steps.back().backward_ready_s = std::move(ready_s_);
  log_.steps.back().backward_ready_at = std::move(ready_at_);
  log_.comm_total.calls += stats.calls;
  log_.comm_total.bytes += stats.bytes;
  log_.comm_total.time_s += stats.comm_s;
  log_.comm_total.exposed_s += stats.exposed_s;
}

// Every --log-every steps, and always the first and the last.
void StepRunner::log_step(const StepFigures& f) const {
  const int64_t every = ctx_.options.log_every;
  if (every <= 0) return;
  if ((f.step + 1) % every != 0 && !ctx_.is_last(f.step) && f.step != state_.start_step) return;
  const double comm_s = state_.sync->stats().comm_s;
  ctx_.say(
      fmt::format("step {:>5}/{} | loss {:.4f} | lr {:.2e} | {:7.1f} ms | {:8.0f} tok/s | "
                  "{:6.1f} GFLOP/s{}\n",
                  f.step + 1, ctx_.options.steps, f.loss, f.lr, f.seconds * 1e3,
                  data_.tokens_per_step() / f.seconds, state_.flops_per_step / f.seconds / 1e9,
                  ctx_.world > 1 ? fmt::format(" | comm {:.1f} ms", comm_s * 1e3) : std::string()));
}

}  // namespace

bool reported_inclusive(Phase p) { return p == Phase::kComm; }

StepLog train_steps(const RunContext& ctx, const RunPlan& plan, const TrainingData& data,
                    TrainingState& state, results::RunSummary& summary) {
  StepLog log;
  log.job_on_machine = ranks_on_this_machine(ctx.comm);
  log.load_start = profiler::read_host_load(log.job_on_machine);
  log.cpu_start_s = profiler::process_cpu_seconds();
  log.wall_start = profiler::Clock::now();
  const int64_t steps = ctx.options.steps;
  log.steps.reserve(static_cast<std::size_t>(std::max<int64_t>(0, steps - state.start_step)));
  log.peaks.absorb(profiler::tracked_memory());  // the setup's peak
  StepRunner runner(ctx, plan, data, state, summary, log);
  for (int64_t step = state.start_step; step < steps; ++step) {
    if (!runner.run_step(step)) break;
  }
  return log;
}

}  // namespace trainscope::training
