// The options of one training run (`trainscope train`'s flags, a suite
// case's settings): plain values, read and written through the option table
// (options/train_option_table.h); their choices are named in options/choices.h.
#ifndef TRAINSCOPE_OPTIONS_TRAIN_OPTIONS_H_
#define TRAINSCOPE_OPTIONS_TRAIN_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "options/choices.h"
#include "options/data_options.h"
#include "options/lora_options.h"

namespace trainscope::options {

// --inject-delay RANK:MS: rank RANK sleeps MS milliseconds in its forward
// phase every step, a straggler made to order (tests and demos).
struct InjectedDelay {
  int rank = 0;
  double ms = 0;
  bool operator==(const InjectedDelay&) const = default;
};
// "RANK:MS" with RANK >= 0 an integer and MS >= 0 finite; Error naming `flag`
// otherwise. (Whether RANK is in the job is checked once the job is known.)
InjectedDelay parse_injected_delay(std::string_view text, std::string_view flag = "--inject-delay");

struct TrainOptions {
  std::string model = "seed";  // preset name or config.json path
  int batch = 0;               // global batch (rows); 0 = the preset's default
  int block = 0;               // tokens per example; 0 = the preset's default
  int64_t steps = 20;          // total optimizer steps (including resumed ones)
  double lr = 3e-4;
  LrScheduleKind schedule = LrScheduleKind::kConstant;
  int64_t lr_warmup = 0;
  double min_lr = 0.0;
  double weight_decay = 0.01;
  double beta1 = 0.9, beta2 = 0.999, adam_eps = 1e-8;
  double grad_clip = 1.0;                  // max global gradient norm; <= 0 disables
  uint64_t seed = 42;                      // weights; the data order uses data.seed
  Precision precision = Precision::kFp32;  // the GEMMs' (training/precision.h)
  // The library of the fp32 linear layers' GEMMs (kernels/gemm_backend.h).
  GemmBackend gemm = GemmBackend::kAuto;
  int threads = 0;           // per rank; 0 = cores / ranks on this host
  int64_t warmup_steps = 1;  // first steps left out of the timing statistics

  std::string tokenizer = "byte";
  DataOptions data;        // block/global_batch/world/rank are filled in
  int64_t eval_every = 0;  // validation every N steps (0: only at the end if val exists)
  int64_t val_batches = 4;

  ReduceStrategy reduce = ReduceStrategy::kFused;
  double bucket_mb = 32;  // fused/overlap bucket size; <= 0 = whole arena
  AllReduceAlgorithm allreduce = AllReduceAlgorithm::kMpi;
  int zero = 0;  // ZeRO stage: 0, or 1 (optimizer state sharded over ranks)
  // What the gradients travel as (comm/all_reducer.h): fp32, or bf16 (half
  // the bytes, summed in fp32, the result rounded to bf16).
  CommDtype comm_dtype = CommDtype::kFp32;
  // Tests only (no flag): pretend each host holds this many ranks, so the
  // two-level path of --allreduce hier runs on one machine.
  int hier_ranks_per_host = 0;

  // Empty: no checkpoints. With LoRA each step directory is a PEFT adapter
  // folder (training/adapters.h) holding the adapters and their AdamW state.
  std::string checkpoint_dir;
  bool overwrite = false;  // a new run may replace the checkpoints in checkpoint_dir
  int64_t save_every = 0;  // 0: only at the end (when checkpoint_dir is set)
  std::string resume;      // checkpoint dir or step dir
  // A Hugging Face checkpoint directory to start from (its config.json is the
  // model; a fresh optimizer); empty: random initial weights.
  std::string init_from;
  // Non-empty: write what another framework needs to train this run there
  // (training/run/export.h) and stop before training.
  std::string export_dir;
  Engine engine = Engine::kTrainscope;  // a suite case's; `train` is trainscope
  FineTune fine_tune = FineTune::kFull;
  LoraConfig lora;              // with kLora
  std::string summary_path;     // JSON summary (rank 0)
  std::string trace_path;       // Chrome trace (merged on rank 0; each rank streams its own)
  std::string status_dir;       // each rank keeps its RankStatus here; empty: none
  double stall_timeout_s = 60;  // the watchdog's limit on a wait (profiler/stall_watchdog.h)
  StallAction stall_action = StallAction::kWarn;
  double stall_grace_s = 0;  // kAbort: how long after the timeout; 0: the timeout again
  std::optional<InjectedDelay> inject_delay;
  // Non-empty: a one-rank run's summary whose compute every rank replays as
  // sleeps, with the real gradient synchronisation (training/run/replay.h).
  std::string replay_compute;
  // Every replayed duration times this (>= 1): with a suite's link rate
  // divided by as much, N hosts' traffic at 1/scale of the rate, for a
  // machine that cannot carry it at full rate (a case's replay_time_scale).
  double replay_time_scale = 1;
  int64_t log_every = 1;  // progress line every N steps (rank 0)
  bool quiet = false;

  // The options as JSON (for the summary and the cross-rank check).
  nlohmann::json to_json() const;
};

}  // namespace trainscope::options

#endif  // TRAINSCOPE_OPTIONS_TRAIN_OPTIONS_H_
