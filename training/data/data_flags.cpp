#include "training/data/data_flags.h"

#include <string>

namespace trainscope::training {

void add_data_flags(CLI::App& cmd, DataOptions* o) {
  const std::string group = "Data";
  cmd.add_option("--data", o->source,
                 "SOURCE: builtin:stories[?docs=N&valid_docs=N&seed=S], a directory with "
                 "train.jsonl/valid.jsonl, a .jsonl file, or a text file (prefix jsonl: or "
                 "text: to force the format)")
      ->default_val(o->source)->group(group);
  cmd.add_option("--split", o->split,
                 "Split to train on, optionally sliced: train, train[0%:50%], train[100:200]")
      ->default_val(o->split)->group(group);
  cmd.add_option("--text-field", o->text_field, "JSONL field holding the text of text records")
      ->default_val(o->text_field)->group(group);
  cmd.add_option("--delimiter", o->delimiter,
                 "Text files: a line equal to this (trimmed) separates documents")
      ->default_val(o->delimiter)->group(group);
  cmd.add_flag("--one-per-line", o->one_per_line, "Text files: every non-blank line is a document")
      ->group(group);
  cmd.add_option_function<std::string>(
         "--batching", [o](const std::string& v) { o->mode = parse_batch_mode(v, "--batching"); },
         "pad: one document per example, truncated or padded with end-of-text; pack: "
         "documents joined by end-of-text and cut into blocks")
      ->default_str(std::string(to_string(o->mode)))->group(group);
  cmd.add_flag("--mask-padding", o->mask_padding,
               "pad mode: padded targets are -1 (not predicted) except the first end-of-text")
      ->group(group);
  cmd.add_option("--block", o->block, "Tokens per example; rows have block - 1 tokens")
      ->default_val(o->block)->group(group);
  cmd.add_option("--global-batch", o->global_batch,
                 "Rows per step over all ranks; must be divisible by the number of ranks")
      ->default_val(o->global_batch)->group(group);
  cmd.add_option("--data-seed", o->seed, "Seed of the per-epoch shuffles")
      ->default_val(o->seed)->group(group);
  cmd.add_flag("--no-shuffle{false}", o->shuffle, "Keep the source order in every epoch")
      ->group(group);
  cmd.add_option_function<std::string>(
         "--data-mode",
         [o](const std::string& v) { o->data_mode = parse_data_mode(v, "--data-mode"); },
         "naive (one process), duplicated (every rank holds all data, takes its slice of each "
         "batch) or sharded (every rank holds only its part)")
      ->default_str(std::string(to_string(o->data_mode)))->group(group);
  cmd.add_option_function<std::string>(
         "--shard", [o](const std::string& v) { o->shard = parse_shard_mode(v, "--shard"); },
         "sharded mode: strided (rows r, r+N, ... of each global batch; same batches as naive) "
         "or contiguous (a 1/N block of the data, shuffled locally)")
      ->default_str(std::string(to_string(o->shard)))->group(group);
  cmd.add_flag("--skip-bad-records", o->skip_bad_records,
               "JSONL: skip and count malformed records instead of failing")
      ->group(group);
  cmd.add_option("--max-record-bytes", o->max_record_bytes,
                 "A longer line or text document is an error")
      ->default_val(o->max_record_bytes)->group(group);
  cmd.add_option("--stories", o->builtin_docs, "builtin:stories: training stories")
      ->default_val(o->builtin_docs)->group(group);
  cmd.add_option("--valid-stories", o->builtin_valid_docs, "builtin:stories: validation stories")
      ->default_val(o->builtin_valid_docs)->group(group);
  cmd.add_option("--stories-seed", o->builtin_seed, "builtin:stories: seed of the corpus itself")
      ->default_val(o->builtin_seed)->group(group);
  cmd.add_option("--data-threads", o->threads,
                 "Threads that read and tokenize at start (0: OpenMP default); results do not "
                 "depend on it")
      ->default_val(o->threads)->group(group);
}

}  // namespace trainscope::training
