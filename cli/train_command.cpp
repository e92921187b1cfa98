// `trainscope train`: one training run, alone or as every rank of an mpirun
// job (the communicator is picked from the environment mpirun gives).
//
//   trainscope train --model seed --steps 50
//   mpirun -np 2 trainscope train --mode sharded --reduce overlap --summary s.json
#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "cli/commands.h"
#include "cli/validators.h"
#include "comm/communicator.h"
#include "kernels/check.h"
#include "training/model_config.h"
#include "training/trainer.h"

namespace trainscope::cli {
namespace {

struct TrainFlags {
  training::TrainOptions o;
  std::string schedule = "constant";
  std::string batching = "pad";
  std::string mode = "naive";
  std::string shard = "strided";
  std::string reduce = "fused";
  std::string allreduce = "mpi";
  std::string comm_dtype = "fp32";
  std::string backend = "auto";
  std::string inject_delay;
  bool no_shuffle = false;
  std::string fine_tune = "full";
  std::string precision = "fp32";
  std::string lora_targets = "q_proj,v_proj";
  std::vector<CLI::Option*> lora_flags;  // given without --fine-tune lora: an error
};

void run(TrainFlags& f) {
  training::TrainOptions& o = f.o;
  o.schedule = training::parse_lr_schedule(f.schedule);
  o.data.mode = training::parse_batch_mode(f.batching, "--batching");
  o.data.data_mode = training::parse_data_mode(f.mode, "--mode");
  o.data.shard = training::parse_shard_mode(f.shard, "--shard");
  o.data.shuffle = !f.no_shuffle;
  o.reduce = comm::parse_reduce_strategy(f.reduce);
  o.allreduce = comm::parse_allreduce_algorithm(f.allreduce);
  o.comm_dtype = comm::parse_comm_dtype(f.comm_dtype);
  o.fine_tune = training::parse_fine_tune(f.fine_tune);
  o.precision = training::parse_precision(f.precision);
  o.lora.targets = training::parse_lora_targets(f.lora_targets, "--lora-targets");
  for (const CLI::Option* flag : f.lora_flags) {
    if (flag->count() > 0 && o.fine_tune != training::FineTune::kLora) {
      throw Error(fmt::format("{} sets up LoRA adapters: it goes with --fine-tune lora",
                              flag->get_name()));
    }
  }
  if (!f.inject_delay.empty()) o.inject_delay = training::parse_injected_delay(f.inject_delay);
  auto comm = comm::make_communicator(f.backend);
  run_on_every_rank(*comm, [&] {
    if (o.inject_delay && o.inject_delay->rank >= comm->size()) {
      // Every rank sees the same job: one message, from rank 0.
      throw comm::CollectiveError(fmt::format("--inject-delay: rank {} is not in this job of {} "
                                              "rank(s)",
                                              o.inject_delay->rank, comm->size()));
    }
    const results::RunSummary s = training::run_training(o, *comm);
    if (s.status == results::RunStatus::kFailed) {
      if (comm->rank() == 0) std::fprintf(stderr, "trainscope: error: %s\n", s.error.c_str());
      throw SilentExit{kExitFailure};
    }
  });
}

// The flags of `train`, on `cmd`, filling `flags`.
void add_train_flags(CLI::App* cmd, TrainFlags* flags_ptr) {
  TrainFlags* flags = flags_ptr;
  training::TrainOptions& o = flags->o;
  auto* model = cmd->add_option("--model", o.model,
                  "Preset (" + fmt::format("{}", fmt::join(training::model_preset_names(), ", ")) +
                      ") or a Hugging Face style config.json")
      ->capture_default_str();
  cmd->add_option("--batch", o.batch, "Global batch in sequences, over all ranks (default: the "
                                      "preset's, 4 for seed)")
      ->check(kPositive);
  cmd->add_option("--block", o.block, "Tokens per example; each row trains on block-1 positions "
                                      "(default: the preset's, 512 for seed)")
      ->check(kPositive);
  cmd->add_option("--steps", o.steps, "Optimizer steps in total (a resumed run continues to this)")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--lr", o.lr, "Peak learning rate (AdamW)")->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--schedule", flags->schedule, "Learning-rate schedule: constant or cosine")
      ->capture_default_str();
  cmd->add_option("--lr-warmup", o.lr_warmup, "Steps of linear learning-rate warm-up")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--min-lr", o.min_lr, "Final learning rate of the cosine schedule")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--weight-decay", o.weight_decay, "AdamW decoupled weight decay")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--grad-clip", o.grad_clip, "Clip the global gradient norm to this (<= 0: off)")
      ->capture_default_str()
      ->check(kFinite);
  cmd->add_option("--seed", o.seed, "Seed of the initial weights")->capture_default_str();
  cmd->add_option("--threads", o.threads, "Compute threads per rank (OpenMP and OpenBLAS); "
                                          "default: cores / ranks on this host")
      ->check(kPositive);
  cmd->add_option("--precision", flags->precision,
                  "The linear layers' GEMMs: fp32 (OpenBLAS) or bf16 (mixed precision: bf16 "
                  "copies of weights and inputs, fp32 sums, through oneDNN; fp32 master weights, "
                  "gradients and optimizer state; needs AVX512-BF16 or AMX, see trainscope "
                  "doctor)")
      ->capture_default_str();
  cmd->add_option("--warmup-steps", o.warmup_steps,
                  "First steps left out of the timing statistics (page faults, caches)")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--data", o.data.source,
                  "Data SOURCE: builtin:stories[?docs=N] (short stories), builtin:instruct[?docs=N] "
                  "(chat pairs: a sentence told like a pirate), a text file, a .jsonl file (text, "
                  "chat or instruction records) or a directory with train.jsonl/valid.jsonl")
      ->capture_default_str();
  cmd->add_option("--split", o.data.split, "Split, optionally sliced: train, valid, "
                                           "train[0%:50%], train[100:200]")
      ->capture_default_str();
  cmd->add_option("--tokenizer", o.tokenizer, "byte, or gpt2:PATH (vocab.json+merges.txt, "
                                              "encoder.json+vocab.bpe or tokenizer.json)")
      ->capture_default_str();
  cmd->add_option("--text-field", o.data.text_field, "JSONL field holding the text")
      ->capture_default_str();
  cmd->add_option("--delimiter", o.data.delimiter, "Plain text: the line that separates documents")
      ->capture_default_str();
  cmd->add_flag("--one-per-line", o.data.one_per_line, "Plain text: one document per line");
  cmd->add_option("--batching", flags->batching, "pad (one document per example, truncated or "
                                                 "padded) or pack (documents concatenated)")
      ->capture_default_str();
  cmd->add_flag("--mask-padding", o.data.mask_padding, "pad mode: leave padding out of the loss");
  cmd->add_flag("--mask-prompt", o.data.mask_prompt,
                "pad mode, chat data: leave everything before the last assistant turn out of the "
                "loss, so the model learns the answers only");
  cmd->add_option("--data-seed", o.data.seed, "Seed of the per-epoch data order")
      ->capture_default_str();
  cmd->add_flag("--no-shuffle", flags->no_shuffle, "Visit examples in file order every epoch");
  cmd->add_flag("--skip-bad-records", o.data.skip_bad_records,
                "Skip (and count) malformed JSONL records instead of failing");
  cmd->add_option("--eval-every", o.eval_every, "Validation loss every N steps and at the end "
                                                "(0: never); needs a source with a valid split")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--val-batches", o.val_batches, "Batches per validation")->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--mode", flags->mode,
                  "Data parallelism: naive (one process), duplicated (every rank loads all data, "
                  "keeps its rows) or sharded (every rank loads only its shard)")
      ->capture_default_str();
  cmd->add_option("--shard", flags->shard,
                  "sharded mode: strided (rank r gets rows r, r+N, ...: same global batches as "
                  "naive) or contiguous (rank r holds the r-th 1/N of the examples)")
      ->capture_default_str();
  cmd->add_option("--reduce", flags->reduce,
                  "Gradient reduction: per-tensor (one all-reduce per tensor), fused (buckets of "
                  "--bucket-mb after backward), overlap (buckets reduced by a communication thread "
                  "during backward) or overlap-poll (nonblocking all-reduces polled between "
                  "kernels)")
      ->capture_default_str();
  cmd->add_option("--allreduce", flags->allreduce,
                  "How each reduction is carried out, under any --reduce: mpi (Open MPI's "
                  "MPI_Allreduce), shm (ranks of one host sum straight out of each other's "
                  "gradients in an MPI-3 shared window) or hier (shm inside each host, MPI "
                  "between hosts)")
      ->capture_default_str();
  cmd->add_option("--comm-dtype", flags->comm_dtype,
                  "What gradients travel as, under any --reduce and --allreduce: fp32, or bf16 "
                  "(rounded to bf16, half the bytes, each addition in fp32; as PyTorch DDP's "
                  "bf16_compress_hook)")
      ->capture_default_str();
  cmd->add_option("--zero", o.zero,
                  "ZeRO stage: 0 (every rank keeps the whole AdamW state) or 1 (gradients "
                  "reduce-scattered, each rank updates its 1/N slice with 1/N of the state, "
                  "parameters all-gathered; needs --reduce fused and 2+ ranks)")
      ->capture_default_str();
  cmd->add_option("--bucket-mb", o.bucket_mb, "Bucket size in MiB for fused/overlap(-poll) (<= 0: the "
                                              "whole gradient in one all-reduce)")
      ->capture_default_str()
      ->check(kFinite);
  cmd->add_option("--comm", flags->backend, "Communicator: auto (MPI under mpirun), mpi or local")
      ->capture_default_str();
  auto* checkpoint_dir = cmd->add_option("--checkpoint-dir", o.checkpoint_dir,
                  "Save checkpoints here (safetensors + config.json; with --fine-tune lora PEFT "
                  "adapter folders); always at the end");
  cmd->add_option("--save-every", o.save_every, "Also checkpoint every N steps (0: end only)")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_flag("--overwrite", o.overwrite,
                "Let a new run replace the checkpoints already in --checkpoint-dir (without it, "
                "a directory holding another run's checkpoints is refused)")
      ->needs(checkpoint_dir);
  auto* resume = cmd->add_option("--resume", o.resume,
                  "Continue the run saved in this checkpoint directory (its model config is "
                  "used: --model does not go with it)")
      ->excludes(model);
  cmd->add_option("--init-from", o.init_from,
                  "Start from pretrained weights: a Hugging Face Llama checkpoint directory "
                  "(config.json + model.safetensors, or model.safetensors.index.json and its "
                  "shards; F32, F16 or BF16), whose config.json is the model; the optimizer starts "
                  "fresh. Not with --model (the directory names the model) or --resume")
      ->excludes(model)
      ->excludes(resume);
  cmd->add_option("--fine-tune", flags->fine_tune,
                  "What trains: full (every weight) or lora (low-rank adapters on frozen weights, "
                  "as mlx-lm's lora: only their gradients are reduced and only they have "
                  "optimizer state; checkpoints are PEFT adapter folders). Usually with "
                  "--init-from")
      ->capture_default_str();
  flags->lora_flags = {
      cmd->add_option("--lora-rank", o.lora.rank, "LoRA rank r")->capture_default_str(),
      cmd->add_option("--lora-alpha", o.lora.alpha, "LoRA alpha; the adapters' scale is alpha / "
                                                    "rank")
          ->capture_default_str(),
      cmd->add_option("--lora-dropout", o.lora.dropout, "Dropout on the adapters' input, in "
                                                        "training steps")
          ->capture_default_str(),
      cmd->add_option("--lora-layers", o.lora.layers, "Adapt the last N layers (0: all)")
          ->capture_default_str(),
      cmd->add_option("--lora-targets", flags->lora_targets,
                      "Projections that get adapters, comma-separated, from q_proj, k_proj, "
                      "v_proj, o_proj, gate_proj, up_proj, down_proj (or q,k,v,o,gate,up,down)")
          ->capture_default_str(),
  };
  cmd->add_option("--summary", o.summary_path,
                  "Write a JSON summary (config, per-step losses and times, tokens/s, memory)");
  cmd->add_option("--trace", o.trace_path,
                  "Write a Chrome trace (Perfetto, chrome://tracing) of every rank's phases, "
                  "collectives and tracked memory: each rank streams its own as it goes "
                  "(for t.json, t.rank1.json...: whole JSON even if the job dies) and rank 0 "
                  "merges them into FILE at the end");
  cmd->add_option("--status-dir", o.status_dir,
                  "Each rank keeps DIR/rank-R.json current (about every second): its stage, step, "
                  "phase and the collective it waits in. The suite runner reads them when a case "
                  "hangs or dies");
  cmd->add_option("--stall-timeout", o.stall_timeout_s,
                  "Seconds a collective may wait (or a phase last outside one) before the rank "
                  "prints, once, where it is: step, phase, collective, bucket and wait")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--inject-delay", flags->inject_delay,
                  "RANK:MS: rank RANK sleeps MS milliseconds in its forward phase every step, a "
                  "straggler for tests and demos (e.g. 1:50)");
  cmd->add_option("--log-every", o.log_every, "Print a progress line every N steps")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_flag("--quiet", o.quiet, "Print nothing but errors");
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto flags = std::make_shared<TrainFlags>();
  auto* cmd = app.add_subcommand(
      "train",
      "Train the Llama-style model and report loss, step time, tokens/s, memory by category and "
      "phase times. Run it directly, or under mpirun for data parallelism (every rank runs this "
      "same command; --batch is the global batch).");
  add_train_flags(cmd, flags.get());
  cmd->callback([flags] { run(*flags); });
}

void check_train_args(const std::vector<std::string>& args) {
  CLI::App app;
  TrainFlags flags;
  add_train_flags(&app, &flags);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses from the back
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw Error(e.what());
  }
}

}  // namespace trainscope::cli
