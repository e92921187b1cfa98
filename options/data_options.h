// DataOptions: everything that decides which tokens reach which rank, and the
// checks of their values together (the names of its choices: options/choices.h).
//
// A plain value type; copy it freely. validate_options is pure and
// thread-safe. Every field below states its default; the order of examples is
// a pure function of these options (see batch_source.h for the contract).
#ifndef TRAINSCOPE_OPTIONS_DATA_OPTIONS_H_
#define TRAINSCOPE_OPTIONS_DATA_OPTIONS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "options/choices.h"

namespace trainscope::options {

inline constexpr int64_t kDefaultMaxRecordBytes = int64_t{64} << 20;

struct DataOptions {
  // SOURCE: "builtin:stories[?docs=N&valid_docs=N&seed=S]" (or
  // builtin:instruct, the same options: training/data/instruct.h), a directory with
  // train.jsonl / valid.jsonl (/ test.jsonl), a .jsonl/.json file, or any other
  // file read as plain text. Prefixes "jsonl:" and "text:" force the format.
  // Default: the built-in story corpus.
  std::string source = "builtin:stories";
  // Split name, optionally sliced: "train", "valid", "train[0%:50%]",
  // "train[100:200]". A plain file has only the "train" split. Default "train".
  std::string split = "train";
  // JSONL field holding the text of a text record. Default "text".
  std::string text_field = "text";
  // Plain text: a line whose trimmed content equals this separates documents.
  // Default "<|endoftext|>", as in TinyStories' text files.
  std::string delimiter = std::string("<|endoftext|>");
  // Plain text: every non-blank line is one document (delimiter ignored).
  // Default false.
  bool one_per_line = false;

  // pad or pack. Default pad.
  BatchMode mode = BatchMode::kPad;
  // pad mode: targets at padded positions are -1, except the first
  // end-of-text after the text. Default false.
  bool mask_padding = false;
  // pad mode, chat data: targets before the last assistant turn are -1, so
  // the loss is the assistant's answer only (mlx-lm's --mask-prompt).
  bool mask_prompt = false;
  // Tokens per example; a row has block - 1 inputs and targets. Default 129.
  int block = 129;
  // Rows per global step, over all ranks. Default 8.
  int global_batch = 8;
  // Seed of the per-epoch permutations. Default 1234.
  uint64_t seed = 1234;
  // false: every epoch uses the identity order. Default true.
  bool shuffle = true;

  int world_size = 1;  // default 1
  int rank = 0;        // default 0
  // naive (world_size must be 1), duplicated or sharded. Default naive.
  DataMode data_mode = DataMode::kNaive;
  // sharded only: strided or contiguous. Default strided.
  ShardMode shard = ShardMode::kStrided;

  // JSONL: skip (and count) malformed records instead of failing. Every rank
  // then validates every record while indexing, so that all ranks agree on
  // which examples exist. Default false.
  bool skip_bad_records = false;
  // A line (or text document) longer than this is an error. Default 64 MiB.
  int64_t max_record_bytes = kDefaultMaxRecordBytes;

  // builtin:stories defaults when the SOURCE string does not set them.
  int64_t builtin_docs = 20000;       // training stories
  int64_t builtin_valid_docs = 1000;  // validation stories (disjoint indices)
  uint64_t builtin_seed = 42;         // the corpus itself, not the shuffle

  // Threads that read and tokenize at load; 0 = OpenMP's default. The result
  // does not depend on it. Default 0.
  int threads = 0;
};

// Throws trainscope::Error for inconsistent options (block < 2, global batch
// not divisible by world size, naive with several ranks, rank out of range...).
void validate_options(const DataOptions& options);

}  // namespace trainscope::options

#endif  // TRAINSCOPE_OPTIONS_DATA_OPTIONS_H_
