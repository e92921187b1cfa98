// What setup builds for the rest of a run, one struct per stage:
//   RunPlan        configure_run(): the model, where the run starts from, the
//                  options as recorded, the tokenizer, the ranks' clocks;
//   TrainingData   load_run_data(): this rank's batches;
//   TrainingState  build_training_state(): the model, its optimizer state and
//                  what every step uses (gradient reduction, batch buffers,
//                  schedule, step timer, trace).
// The step, the milestones and the run report (training/run/) read them, and
// update TrainingState's model, moments and buffers. One thread uses them.
#ifndef TRAINSCOPE_TRAINING_RUN_TRAINING_STATE_H_
#define TRAINSCOPE_TRAINING_RUN_TRAINING_STATE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/all_reducer.h"
#include "comm/grad_sync.h"
#include "kernels/adamw.h"
#include "kernels/storage.h"
#include "profiler/step_timer.h"
#include "profiler/trace.h"
#include "training/checkpoint.h"
#include "training/data/batch_source.h"
#include "options/data_options.h"
#include "training/llama_model.h"
#include "training/lr_schedule.h"
#include "training/model_config.h"
#include "training/param_layout.h"
#include "training/tokenizers/tokenizer.h"

namespace trainscope::training {

struct RunPlan {
  ModelConfig config;
  std::optional<CheckpointInfo> resume;  // --resume's checkpoint
  int threads = 1;                       // per rank
  // The options with the model's name: the summary's, the checkpoints' and
  // what --resume compares against.
  nlohmann::json options_json;
  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<int64_t> clock_offsets;  // per rank, for the merged trace
};

struct TrainingData {
  options::DataOptions options;  // --data's, with the batch shape and this rank filled in
  double load_s = 0;             // opening the sources
  std::unique_ptr<BatchSource> source;
  std::unique_ptr<BatchSource> val_source;  // only with --eval-every
  int rows = 0, seq_len = 0;                // this rank's batch

  int64_t tokens_per_step() const { return static_cast<int64_t>(options.global_batch) * seq_len; }
  int64_t tokens_per_rank_step() const { return static_cast<int64_t>(rows) * seq_len; }
};

struct TrainingState {
  // The recorder labels this rank's process in the trace viewer.
  TrainingState(int rank, std::string host) : recorder(rank, std::move(host)) {}
  TrainingState(const TrainingState&) = delete;
  TrainingState& operator=(const TrainingState&) = delete;

  std::unique_ptr<comm::AllReducer> reducer;  // before model: it holds the gradients
  std::optional<LlamaModel<float>> model;
  // The arena ranges whose AdamW moments this rank holds, in order: the
  // whole arena, or with --zero 1 its slice_of() of every bucket
  // (zero_buckets); the moments are their concatenation.
  std::vector<comm::TensorRange> zero_buckets, opt_pieces;
  kernels::Buffer<float> adam_m, adam_v;
  int64_t start_step = 0;     // a resumed run's
  double flops_per_step = 0;  // of the global batch
  std::unique_ptr<comm::GradSync> sync;
  kernels::Buffer<int32_t> inputs, targets;
  LrSchedule schedule;
  kernels::AdamWParams adamw;
  std::optional<profiler::StepTimer> timer;
  std::unique_ptr<profiler::WorkCounter> work_counter;  // the work lane's; else null
  profiler::TraceRecorder recorder;
  std::optional<profiler::TraceStream> trace_stream;  // after recorder: it reads it

  std::size_t param_count() const { return static_cast<std::size_t>(model->layout().total()); }
  std::size_t trainable_count() const { return static_cast<std::size_t>(model->trainable_count()); }
  // The tensors that train, as checkpoints and per-tensor reductions see them.
  const TensorTable& trainable_table() const {
    return model->lora_layout() ? static_cast<const TensorTable&>(*model->lora_layout())
                                : model->layout();
  }
};

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_RUN_TRAINING_STATE_H_
