#include "options/train_option_table.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <type_traits>

#include "base/check.h"

namespace trainscope::options {
namespace {

using nlohmann::json;
using O = TrainOptions;

// ---- text forms ------------------------------------------------------------

// An enumeration's TextRef from its field and its type (options/choices.h
// names it).
#define TS_ENUM_REF(field, E)                                     \
  TextRef {                                                       \
    [](const O& o) { return std::string(enum_name(o.field)); },   \
        [](O& o, std::string_view text, std::string_view where) { \
          o.field = parse_choice<E>(text, where);                 \
        },                                                        \
        enum_names<E>()                                           \
  }

std::string inject_delay_text(const O& o) {
  return o.inject_delay ? fmt::format("{}:{}", o.inject_delay->rank, o.inject_delay->ms) : "";
}
void set_inject_delay(O& o, std::string_view text, std::string_view where) {
  if (text.empty()) {
    o.inject_delay.reset();
  } else {
    o.inject_delay = parse_injected_delay(text, where);
  }
}

std::string in_unit_interval(double v) {
  return v >= 0 && v < 1 ? std::string() : std::string("must be in [0, 1)");
}

bool lora_applies(const O& o) { return o.fine_tune == FineTune::kLora; }
bool bucket_applies(const O& o) { return o.reduce != ReduceStrategy::kPerTensor; }

// "lora", then the adapters' settings that are not the trainer's defaults:
// "lora-rank16-alpha32-drop0.1-last2-q.k.v.o".
std::string lora_name(const LoraConfig& l) {
  const LoraConfig defaults;
  std::string name = "lora";
  if (l.rank != defaults.rank) name += fmt::format("-rank{}", l.rank);
  if (l.alpha != defaults.alpha) name += fmt::format("-alpha{}", l.alpha);
  if (l.dropout != defaults.dropout) name += fmt::format("-drop{}", l.dropout);
  if (l.layers != defaults.layers) name += fmt::format("-last{}", l.layers);
  if (l.targets != defaults.targets) {
    std::vector<std::string> targets;
    for (LoraTarget t : l.targets) {
      std::string_view n = enum_name(t);
      if (n.ends_with("_proj")) n.remove_suffix(5);  // the short names parse_lora_target takes
      targets.emplace_back(n);
    }
    name += fmt::format("-{}", fmt::join(targets, "."));
  }
  return name;
}

// ---- the PyTorch peer's counterparts ------------------------------------------
// What a row's `pytorch` says (options/train_option_table.h).

// The peer trains with the value as trainscope would: the export carries it
// (the weights, every step's batch, the learning rates) or the peer has the
// same flag (--reduce, --bucket-mb, --comm-dtype, --threads, --summary).
std::string peer_runs_it(const O&) { return ""; }
// trainscope's own diagnostics (the stall watchdog, its status files and
// progress lines): the peer has none, and a case's timeout still bounds it.
std::string peer_ignores_it(const O&) { return ""; }

std::string pytorch_data_mode(const O& o) {
  if (o.data.data_mode != DataMode::kDuplicated) return "";
  return "PyTorch has no duplicated mode: DDP's ranks read their own shard of each batch (use "
         "mode = \"sharded\")";
}

std::string pytorch_shard(const O& o) {
  if (o.data.data_mode != DataMode::kSharded || o.data.shard == ShardMode::kStrided) return "";
  return "the PyTorch peer takes rows r, r + N, ... of each global batch (DistributedSampler's "
         "order, shard = \"strided\")";
}

// Options the peer lacks but whose default it matches: why, when set
// otherwise.
std::string pytorch_precision(const O& o) {
  return o.precision == Precision::kFp32 ? "" : "the PyTorch peer trains in fp32";
}
std::string pytorch_allreduce(const O& o) {
  return o.allreduce == AllReduceAlgorithm::kMpi
             ? ""
             : "DDP reduces over gloo; trainscope's all-reduce algorithms do not apply";
}
std::string pytorch_zero(const O& o) {
  return o.zero == 0 ? "" : "the PyTorch peer runs plain DDP; ZeRO-1 is not mapped";
}
std::string pytorch_eval_every(const O& o) {
  return o.eval_every == 0 ? "" : "the PyTorch peer does not evaluate";
}
std::string pytorch_fine_tune(const O& o) {
  return o.fine_tune == FineTune::kFull ? "" : "the PyTorch peer trains every weight";
}

// ---- the table ---------------------------------------------------------------
// A table: one option a row, its fields in the order TrainOption declares them.
// clang-format off

// What trains and how: the model, the batch, the optimizer, precision.
std::vector<TrainOption> model_rows() {
  return {
      {.summary = "model", .flag = "--model",
       .help = "Preset or a Hugging Face style config.json",
       .ref = Ref<std::string>([](O& o) -> std::string& { return o.model; }),
       .suite = "model", .axis = true, .command = Emit::kAlways, .recorded = Emit::kAlways,
       .name_part = [](const O& o) { return std::filesystem::path(o.model).stem().string(); },
       .name_when = NameWhen::kWhenVarying,
       .pytorch = peer_runs_it},
      {.summary = "batch", .flag = "--batch",
       .help = "Global batch in sequences, over all ranks (default: the preset's, 4 for seed)",
       .ref = Ref<int>([](O& o) -> int& { return o.batch; }), .check = Check::kPositive,
       .suite = "batch", .min = 1, .axis = true, .recorded = Emit::kAlways,
       .name_part = [](const O& o) { return fmt::format("gb{}", o.batch); },
       .name_when = NameWhen::kWhenVarying,
       .pytorch = peer_runs_it},
      {.summary = "block", .flag = "--block",
       .help = "Tokens per example; each row trains on block-1 positions (default: the preset's, "
               "512 for seed)",
       .ref = Ref<int>([](O& o) -> int& { return o.block; }), .check = Check::kPositive,
       .suite = "block", .min = 2, .recorded = Emit::kAlways,
       .pytorch = peer_runs_it},
      {.summary = "steps", .flag = "--steps",
       .help = "Optimizer steps in total (a resumed run continues to this)",
       .ref = Ref<int64_t>([](O& o) -> int64_t& { return o.steps; }),
       .check = Check::kNonNegative, .suite = "steps", .min = 1, .command = Emit::kAlways,
       .recorded = Emit::kAlways,
       .pytorch = peer_runs_it},
      {.summary = "lr", .flag = "--lr", .help = "Peak learning rate (AdamW)",
       .ref = Ref<double>([](O& o) -> double& { return o.lr; }), .check = Check::kPositive,
       .suite = "lr", .recorded = Emit::kNullUnlessSet,
       .pytorch = peer_runs_it},
      {.summary = "schedule", .flag = "--schedule",
       .help = "Learning-rate schedule: constant or cosine",
       .ref = TS_ENUM_REF(schedule, LrScheduleKind),
       .suite = "schedule", .axis = true,
       .pytorch = peer_runs_it},
      {.summary = "lr_warmup", .flag = "--lr-warmup", .help = "Steps of linear learning-rate warm-up",
       .ref = Ref<int64_t>([](O& o) -> int64_t& { return o.lr_warmup; }),
       .check = Check::kNonNegative, .suite = "lr_warmup", .min = 0, .axis = true,
       .pytorch = peer_runs_it},
      {.summary = "min_lr", .flag = "--min-lr", .help = "Final learning rate of the cosine schedule",
       .ref = Ref<double>([](O& o) -> double& { return o.min_lr; }),
       .check = Check::kNonNegative, .suite = "min_lr", .min = 0, .axis = true,
       .pytorch = peer_runs_it},
      {.summary = "weight_decay", .flag = "--weight-decay", .help = "AdamW decoupled weight decay",
       .ref = Ref<double>([](O& o) -> double& { return o.weight_decay; }),
       .check = Check::kNonNegative, .suite = "weight_decay", .min = 0, .axis = true,
       .pytorch = peer_runs_it},
      {.summary = "beta1", .flag = "--beta1", .help = "AdamW's first-moment decay",
       .ref = Ref<double>([](O& o) -> double& { return o.beta1; }), .check = Check::kNonNegative,
       .suite = "beta1", .bad = in_unit_interval, .axis = true,
       .pytorch = peer_runs_it},
      {.summary = "beta2", .flag = "--beta2", .help = "AdamW's second-moment decay",
       .ref = Ref<double>([](O& o) -> double& { return o.beta2; }), .check = Check::kNonNegative,
       .suite = "beta2", .bad = in_unit_interval, .axis = true,
       .pytorch = peer_runs_it},
      {.summary = "adam_eps", .flag = "--adam-eps", .help = "AdamW's epsilon",
       .ref = Ref<double>([](O& o) -> double& { return o.adam_eps; }), .check = Check::kPositive,
       .suite = "adam_eps", .min = 0, .axis = true,
       .pytorch = peer_runs_it},
      {.summary = "grad_clip", .flag = "--grad-clip",
       .help = "Clip the global gradient norm to this (<= 0: off)",
       .ref = Ref<double>([](O& o) -> double& { return o.grad_clip; }), .check = Check::kFinite,
       .pytorch = peer_runs_it},
      {.summary = "seed", .flag = "--seed", .help = "Seed of the initial weights",
       .ref = Ref<uint64_t>([](O& o) -> uint64_t& { return o.seed; }),
       .pytorch = peer_runs_it},
      {.flag = "--threads",
       .help = "Compute threads per rank (OpenMP and OpenBLAS); default: cores / ranks on this "
               "host",
       .ref = Ref<int>([](O& o) -> int& { return o.threads; }), .check = Check::kPositive,
       .suite = "threads", .min = 0, .axis = true, .recorded = Emit::kAlways,
       .name_part = [](const O& o) { return fmt::format("t{}", o.threads); },
       .pytorch = peer_runs_it},
      {.summary = "precision", .flag = "--precision",
       .help = "The linear layers' GEMMs: fp32 (OpenBLAS) or bf16 (mixed precision: bf16 copies "
               "of weights and inputs, fp32 sums, through oneDNN; fp32 master weights, gradients "
               "and optimizer state; needs AVX512-BF16 or AMX, see trainscope doctor)",
       .ref = TS_ENUM_REF(precision, Precision),
       .suite = "precision", .axis = true,
       .name_part = [](const O& o) { return std::string(enum_name(o.precision)); },
       .pytorch = pytorch_precision},
      {.summary = "gemm", .flag = "--gemm",
       .help = "The library of the fp32 linear layers' GEMMs: openblas, onednn, or auto (per "
               "shape the faster on this machine, timed once and cached: kernels/gemm_backend.h)",
       .ref = TS_ENUM_REF(gemm, GemmBackend),
       .suite = "gemm", .axis = true,
       .name_part = [](const O& o) { return "gemm-" + std::string(enum_name(o.gemm)); }},
      {.summary = "warmup_steps", .flag = "--warmup-steps",
       .help = "First steps left out of the timing statistics (page faults, caches)",
       .ref = Ref<int64_t>([](O& o) -> int64_t& { return o.warmup_steps; }),
       .check = Check::kNonNegative, .suite = "warmup_steps", .min = 0,
       .command = Emit::kAlways, .recorded = Emit::kAlways,
       .pytorch = peer_runs_it},
  };
}

// Where the tokens come from and how they are batched and evaluated.
std::vector<TrainOption> data_rows() {
  return {
      {.summary = "data.source", .flag = "--data",
       .help = "Data SOURCE: builtin:stories[?docs=N] (short stories), builtin:instruct[?docs=N] "
               "(chat pairs: a sentence told like a pirate), a text file, a .jsonl file (text, "
               "chat or instruction records) or a directory with train.jsonl/valid.jsonl",
       .ref = Ref<std::string>([](O& o) -> std::string& { return o.data.source; }),
       .suite = "data", .command = Emit::kAlways, .recorded = Emit::kAlways,
       .pytorch = peer_runs_it},
      {.summary = "data.split", .flag = "--split",
       .help = "Split, optionally sliced: train, valid, train[0%:50%], train[100:200]",
       .ref = Ref<std::string>([](O& o) -> std::string& { return o.data.split; }),
       .pytorch = peer_runs_it},
      {.summary = "tokenizer", .flag = "--tokenizer",
       .help = "byte, or gpt2:PATH (vocab.json+merges.txt, encoder.json+vocab.bpe or "
               "tokenizer.json)",
       .ref = Ref<std::string>([](O& o) -> std::string& { return o.tokenizer; }),
       .suite = "tokenizer", .command = Emit::kAlways, .recorded = Emit::kAlways,
       .pytorch = peer_runs_it},
      {.summary = "data.text_field", .flag = "--text-field", .help = "JSONL field holding the text",
       .ref = Ref<std::string>([](O& o) -> std::string& { return o.data.text_field; }),
       .pytorch = peer_runs_it},
      {.summary = "data.delimiter", .flag = "--delimiter",
       .help = "Plain text: the line that separates documents",
       .ref = Ref<std::string>([](O& o) -> std::string& { return o.data.delimiter; }),
       .pytorch = peer_runs_it},
      {.summary = "data.one_per_line", .flag = "--one-per-line",
       .help = "Plain text: one document per line",
       .ref = Ref<bool>([](O& o) -> bool& { return o.data.one_per_line; }),
       .pytorch = peer_runs_it},
      {.summary = "data.batching", .flag = "--batching",
       .help = "pad (one document per example, truncated or padded) or pack (documents "
               "concatenated)",
       .ref = TS_ENUM_REF(data.mode, BatchMode),
       .pytorch = peer_runs_it},
      {.summary = "data.mask_padding", .flag = "--mask-padding",
       .help = "pad mode: leave padding out of the loss",
       .ref = Ref<bool>([](O& o) -> bool& { return o.data.mask_padding; }),
       .pytorch = peer_runs_it},
      {.summary = "data.mask_prompt", .flag = "--mask-prompt",
       .help = "pad mode, chat data: leave everything before the last assistant turn out of the "
               "loss, so the model learns the answers only",
       .ref = Ref<bool>([](O& o) -> bool& { return o.data.mask_prompt; }),
       .pytorch = peer_runs_it},
      {.summary = "data.seed", .flag = "--data-seed", .help = "Seed of the per-epoch data order",
       .ref = Ref<uint64_t>([](O& o) -> uint64_t& { return o.data.seed; }),
       .pytorch = peer_runs_it},
      {.summary = "data.shuffle", .flag = "--no-shuffle",
       .help = "Visit examples in file order every epoch",
       .ref = Ref<bool>([](O& o) -> bool& { return o.data.shuffle; }), .negates = true,
       .pytorch = peer_runs_it},
      {.summary = "data.skip_bad_records", .flag = "--skip-bad-records",
       .help = "Skip (and count) malformed JSONL records instead of failing",
       .ref = Ref<bool>([](O& o) -> bool& { return o.data.skip_bad_records; }),
       .pytorch = peer_runs_it},
      {.summary = "data.max_record_bytes",
       .ref = Ref<int64_t>([](O& o) -> int64_t& { return o.data.max_record_bytes; }),
       .pytorch = peer_runs_it},
      {.summary = "eval_every", .flag = "--eval-every",
       .help = "Validation loss every N steps and at the end (0: never); needs a source with a "
               "valid split",
       .ref = Ref<int64_t>([](O& o) -> int64_t& { return o.eval_every; }),
       .check = Check::kNonNegative, .suite = "eval_every", .min = 0, .command = Emit::kAlways,
       .recorded = Emit::kAlways, .pytorch = pytorch_eval_every},
      {.summary = "val_batches", .flag = "--val-batches", .help = "Batches per validation",
       .ref = Ref<int64_t>([](O& o) -> int64_t& { return o.val_batches; }),
       .check = Check::kPositive},
  };
}

// How the ranks share the work and the gradients.
std::vector<TrainOption> parallel_rows() {
  return {
      {.summary = "mode", .flag = "--mode",
       .help = "Data parallelism: naive (one process), duplicated (every rank loads all data, "
               "keeps its rows) or sharded (every rank loads only its shard)",
       .ref = TS_ENUM_REF(data.data_mode, DataMode),
       .suite = "mode", .axis = true, .command = Emit::kAlways, .recorded = Emit::kAlways,
       .name_part = [](const O& o) { return std::string(enum_name(o.data.data_mode)); },
       .name_when = NameWhen::kAlways,
       .pytorch = pytorch_data_mode},
      {.summary = "shard", .flag = "--shard",
       .help = "sharded mode: strided (rank r gets rows r, r+N, ...: same global batches as "
               "naive) or contiguous (rank r holds the r-th 1/N of the examples)",
       .ref = TS_ENUM_REF(data.shard, ShardMode),
       .suite = "shard", .command = Emit::kAlways, .recorded = Emit::kAlways,
       .pytorch = pytorch_shard},
      {.summary = "reduce", .flag = "--reduce",
       .help = "Gradient reduction: per-tensor (one all-reduce per tensor), fused (buckets of "
               "--bucket-mb after backward), overlap (buckets reduced by a communication thread "
               "during backward) or overlap-poll (nonblocking all-reduces polled between "
               "kernels)",
       .ref = TS_ENUM_REF(reduce, ReduceStrategy),
       .suite = "reduce", .axis = true, .command = Emit::kAlways, .recorded = Emit::kAlways,
       .name_part = [](const O& o) { return std::string(enum_name(o.reduce)); },
       .name_when = NameWhen::kAlways,
       .pytorch = peer_runs_it},
      {.summary = "bucket_mb", .flag = "--bucket-mb",
       .help = "Bucket size in MiB for fused/overlap(-poll) (<= 0: the whole gradient in one "
               "all-reduce)",
       .ref = Ref<double>([](O& o) -> double& { return o.bucket_mb; }), .check = Check::kFinite,
       .suite = "bucket_mb", .axis = true, .recorded = Emit::kNullUnlessSet,
       .applies = bucket_applies,
       .name_part = [](const O& o) {
         return o.bucket_mb <= 0 ? std::string("whole") : fmt::format("b{}", o.bucket_mb);
       },
       .pytorch = peer_runs_it},
      {.summary = "allreduce", .flag = "--allreduce",
       .help = "How each reduction is carried out, under any --reduce: mpi (Open MPI's "
               "MPI_Allreduce), shm (ranks of one host sum straight out of each other's "
               "gradients in an MPI-3 shared window) or hier (shm inside each host, MPI between "
               "hosts)",
       .ref = TS_ENUM_REF(allreduce, AllReduceAlgorithm),
       .suite = "allreduce", .axis = true,
       // "ar-shm", not "shm": the shm transport has that part already.
       .name_part = [](const O& o) {
         return "ar-" + std::string(enum_name(o.allreduce));
       },
       .pytorch = pytorch_allreduce},
      {.summary = "zero", .flag = "--zero",
       .help = "ZeRO stage: 0 (every rank keeps the whole AdamW state) or 1 (gradients "
               "reduce-scattered, each rank updates its 1/N slice with 1/N of the state, "
               "parameters all-gathered; needs --reduce fused and 2+ ranks)",
       .ref = Ref<int>([](O& o) -> int& { return o.zero; }), .suite = "zero", .min = 0,
       .max = 1, .axis = true,
       .name_part = [](const O& o) { return fmt::format("zero{}", o.zero); },
       .pytorch = pytorch_zero},
      {.summary = "comm_dtype", .flag = "--comm-dtype",
       .help = "What gradients travel as, under any --reduce and --allreduce: fp32, or bf16 "
               "(rounded to bf16, half the bytes, each addition in fp32; as PyTorch DDP's "
               "bf16_compress_hook)",
       .ref = TS_ENUM_REF(comm_dtype, CommDtype),
       .suite = "comm_dtype", .axis = true,
       // "comm-bf16", so that it never reads as the precision.
       .name_part = [](const O& o) {
         return "comm-" + std::string(enum_name(o.comm_dtype));
       },
       .pytorch = peer_runs_it},
  };
}

// Checkpoints, starting points and what fine-tunes (LoRA).
std::vector<TrainOption> state_rows() {
  return {
      {.flag = "--checkpoint-dir",
       .help = "Save checkpoints here (safetensors + config.json; with --fine-tune lora PEFT "
               "adapter folders); always at the end",
       .ref = Ref<std::string>([](O& o) -> std::string& { return o.checkpoint_dir; })},
      {.summary = "save_every", .flag = "--save-every",
       .help = "Also checkpoint every N steps (0: end only; a resumed run keeps its own)",
       .ref = Ref<int64_t>([](O& o) -> int64_t& { return o.save_every; }),
       .check = Check::kNonNegative},
      {.flag = "--export-run",
       .help = "Write what another framework needs to train this same run into DIR, and stop "
               "before training: the step-0 weights (DIR/init, safetensors), every step's global "
               "batch (DIR/batches.bin) and the learning rates and AdamW settings (DIR/run.json); "
               "one process only. The suites' PyTorch peer reads it",
       .ref = Ref<std::string>([](O& o) -> std::string& { return o.export_dir; })},
      // A suite case's engine: no flag (`train` is trainscope); the runner
      // launches bench/pytorch/ddp_train.py for the other (suites/pytorch_peer.h).
      {.summary = "engine",
       .ref = TS_ENUM_REF(engine, Engine),
       .suite = "engine", .axis = true, .command = Emit::kNever,
       .name_part = [](const O& o) { return std::string(enum_name(o.engine)); },
       .name_when = NameWhen::kWhenSetOrVarying,
       .pytorch = peer_runs_it},
      {.flag = "--overwrite",
       .help = "Let a new run replace the checkpoints already in --checkpoint-dir (without it, "
               "a directory holding another run's checkpoints is refused)",
       .ref = Ref<bool>([](O& o) -> bool& { return o.overwrite; })},
      {.flag = "--resume",
       .help = "Continue the run saved in this checkpoint directory (its model config is used: "
               "--model does not go with it)",
       .ref = Ref<std::string>([](O& o) -> std::string& { return o.resume; })},
      {.summary = "init_from", .flag = "--init-from",
       .help = "Start from pretrained weights: a Hugging Face Llama checkpoint directory "
               "(config.json + model.safetensors, or model.safetensors.index.json and its "
               "shards; F32, F16 or BF16), whose config.json is the model; the optimizer starts "
               "fresh. Not with --model (the directory names the model) or --resume",
       .ref = Ref<std::string>([](O& o) -> std::string& { return o.init_from; }),
       .suite = "init_from",
       .pytorch = peer_runs_it},
      {.summary = "fine_tune", .flag = "--fine-tune",
       .help = "What trains: full (every weight) or lora (low-rank adapters on frozen weights, "
               "as mlx-lm's lora: only their gradients are reduced and only they have optimizer "
               "state; checkpoints are PEFT adapter folders). Usually with --init-from",
       .ref = TS_ENUM_REF(fine_tune, FineTune),
       .suite = "fine_tune", .axis = true,
       .name_part = [](const O& o) {
         return o.fine_tune == FineTune::kLora ? lora_name(o.lora) : std::string("full");
       },
       .name_when = NameWhen::kWhenSetOrVarying,
       .pytorch = pytorch_fine_tune},
      // The adapters: every one on a LoRA case's command line, defaults too,
      // so that the command says what trained.
      {.summary = "lora.rank", .flag = "--lora-rank", .help = "LoRA rank r",
       .ref = Ref<int>([](O& o) -> int& { return o.lora.rank; }), .suite = "lora_rank",
       .config = "lora.rank", .min = 1, .axis = true, .command = Emit::kAlways,
       .recorded = Emit::kAlways, .applies = lora_applies,
       .name_when = NameWhen::kNever},
      {.summary = "lora.alpha", .flag = "--lora-alpha",
       .help = "LoRA alpha; the adapters' scale is alpha / rank",
       .ref = Ref<double>([](O& o) -> double& { return o.lora.alpha; }), .suite = "lora_alpha",
       .config = "lora.alpha",
       .bad = [](double v) { return v > 0 ? std::string() : std::string("must be positive"); },
       .axis = true, .command = Emit::kAlways, .recorded = Emit::kAlways,
       .applies = lora_applies,
       .name_when = NameWhen::kNever},
      {.summary = "lora.dropout", .flag = "--lora-dropout",
       .help = "Dropout on the adapters' input, in training steps",
       .ref = Ref<double>([](O& o) -> double& { return o.lora.dropout; }),
       .suite = "lora_dropout", .config = "lora.dropout",
       .bad = [](double v) {
         return v >= 0 && v < 1 ? std::string() : std::string("must be in [0, 1)");
       },
       .axis = true, .command = Emit::kAlways, .recorded = Emit::kAlways,
       .applies = lora_applies,
       .name_when = NameWhen::kNever},
      {.summary = "lora.layers", .flag = "--lora-layers", .help = "Adapt the last N layers (0: all)",
       .ref = Ref<int>([](O& o) -> int& { return o.lora.layers; }), .suite = "lora_layers",
       .config = "lora.layers", .min = 0, .axis = true, .command = Emit::kAlways,
       .recorded = Emit::kAlways, .applies = lora_applies,
       .name_when = NameWhen::kNever},
      {.summary = "lora.targets", .flag = "--lora-targets",
       .help = "Projections that get adapters, comma-separated, from q_proj, k_proj, v_proj, "
               "o_proj, gate_proj, up_proj, down_proj (or q,k,v,o,gate,up,down)",
       .ref = TextRef{[](const O& o) { return lora_targets_list(o.lora.targets); },
                      [](O& o, std::string_view text, std::string_view where) {
                        o.lora.targets = parse_lora_targets(text, where);
                      },
                      {},
                      [](const O& o) { return lora_options_json(o.lora)["targets"]; },
                      [](O& o, const json& v) {
                        std::vector<std::string> names = v.get<std::vector<std::string>>();
                        o.lora.targets = parse_lora_targets(fmt::format("{}", fmt::join(names, ",")),
                                                            "lora.targets");
                      }},
       .suite = "lora_targets", .config = "lora.targets", .axis = true,
       .command = Emit::kAlways, .recorded = Emit::kAlways, .applies = lora_applies,
       .name_when = NameWhen::kNever},
  };
}

// What the run writes and says, and injected faults.
std::vector<TrainOption> output_rows() {
  return {
      {.flag = "--summary",
       .help = "Write a JSON summary (config, per-step losses and times, tokens/s, memory)",
       .ref = Ref<std::string>([](O& o) -> std::string& { return o.summary_path; }),
       .pytorch = peer_runs_it},
      {.flag = "--trace",
       .help = "Write a Chrome trace (Perfetto, chrome://tracing) of every rank's phases, "
               "collectives and tracked memory: each rank streams its own as it goes (for "
               "t.json, t.rank1.json...: whole JSON even if the job dies) and rank 0 merges them "
               "into FILE at the end",
       .ref = Ref<std::string>([](O& o) -> std::string& { return o.trace_path; })},
      {.flag = "--status-dir",
       .help = "Each rank keeps DIR/rank-R.json current (about every second): its stage, step, "
               "phase and the collective it waits in. The suite runner reads them when a case "
               "hangs or dies, a stalled rank to name who has not arrived. Default under "
               "mpirun: in the job's own directory (Open MPI's session directory), which goes "
               "with the job",
       .ref = Ref<std::string>([](O& o) -> std::string& { return o.status_dir; }),
       .pytorch = peer_ignores_it},
      {.summary = "stall_timeout_s", .flag = "--stall-timeout",
       .help = "Seconds a collective may wait (or a phase last outside one) before the rank "
               "prints, once, where it is: step, phase, collective, bucket and wait",
       .ref = Ref<double>([](O& o) -> double& { return o.stall_timeout_s; }),
       .check = Check::kPositive,
       .pytorch = peer_ignores_it},
      {.summary = "stall_action", .flag = "--stall-action",
       .help = "After --stall-timeout: warn (say where this rank is) or abort (also end the "
               "job once the stall outlasts the grace period, every rank naming the collective "
               "it waits in and the ranks that have not arrived; exit 3). Suites use abort",
       .ref = TS_ENUM_REF(stall_action, StallAction),
       .suite = "stall_action", .axis = true, .recorded = Emit::kNever,
       .name_when = NameWhen::kNever,
       .pytorch = peer_ignores_it},
      {.summary = "stall_grace_s", .flag = "--stall-grace",
       .help = "Seconds a stall may last beyond --stall-timeout before --stall-action abort ends "
               "the job (0: as long as --stall-timeout)",
       .ref = Ref<double>([](O& o) -> double& { return o.stall_grace_s; }),
       .check = Check::kNonNegative,
       .pytorch = peer_ignores_it},
      {.summary = "inject_delay", .flag = "--inject-delay",
       .help = "RANK:MS: rank RANK sleeps MS milliseconds in its forward phase every step, a "
               "straggler for tests and demos (e.g. 1:50)",
       .ref = TextRef{inject_delay_text, set_inject_delay, {},
                      [](const O& o) { return o.inject_delay ? json(inject_delay_text(o)) : json(); },
                      [](O& o, const json& v) {
                        if (v.is_null()) {
                          o.inject_delay.reset();
                        } else {
                          set_inject_delay(o, v.get<std::string>(), "inject_delay");
                        }
                      }}},
      {.summary = "replay_compute", .flag = "--replay-compute",
       .help = "Replay a measured run's compute instead of computing: FILE is the --summary "
               "of a one-rank run of the same model (trainscope train --summary). Each rank "
               "sleeps that run's data, forward, backward and optimizer times of a step (one "
               "of its measured steps, drawn per rank and step), hands the gradient buckets to "
               "the reduction at the moments backward finalised them, and reduces them for "
               "real: the communication of N hosts with the compute of one, in no CPU. The "
               "loss and gradient norm are the recorded ones; the weights do not change. "
               "Suites set it with replay_from",
       .ref = Ref<std::string>([](O& o) -> std::string& { return o.replay_compute; }),
       .suite = "replay_compute", .recorded = Emit::kNever, .name_when = NameWhen::kNever},
      {.summary = "replay_time_scale", .flag = "--replay-time-scale",
       .help = "With --replay-compute: sleep every replayed duration this many times over (at "
               "least 1). A suite case's replay_time_scale also divides its virtual cluster's "
               "link rate by it, so the whole step runs that many times slower: N hosts' "
               "traffic at a rate this machine can carry. The report divides the case's times "
               "by it",
       .ref = Ref<double>([](O& o) -> double& { return o.replay_time_scale; }),
       .check = Check::kPositive, .suite = "replay_time_scale", .min = 1, .max = 100, .axis = true,
       .name_when = NameWhen::kNever},
      {.flag = "--log-every", .help = "Print a progress line every N steps",
       .ref = Ref<int64_t>([](O& o) -> int64_t& { return o.log_every; }),
       .check = Check::kNonNegative,
       .pytorch = peer_ignores_it},
      {.flag = "--quiet", .help = "Print nothing but errors",
       .ref = Ref<bool>([](O& o) -> bool& { return o.quiet; }),
       .pytorch = peer_runs_it},
  };
}

// clang-format on

}  // namespace

std::vector<TrainOption> train_option_rows() {
  std::vector<TrainOption> t;
  for (auto rows : {model_rows, data_rows, parallel_rows, state_rows, output_rows}) {
    for (TrainOption& row : rows()) t.push_back(std::move(row));
  }
  return t;
}

}  // namespace trainscope::options
