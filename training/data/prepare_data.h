// prepare_data: turn one JSONL file of chat, instruction or text records into
// a dataset directory (train.jsonl + valid.jsonl) that the pipeline reads as a
// SOURCE.
//
// Steps: read every line; parse it (records.h) or count it as a bad record;
// convert instruction records to chat messages; count its tokens (the chat
// template rendering plus the one end-of-text the batcher adds) and DROP it
// (never truncate) when that exceeds max_seq_length; shuffle the kept records
// with `seed`; write the first round(kept * (1 - valid_fraction)) to
// train.jsonl and the rest to valid.jsonl. Output lines are {"messages": ...}
// for chat and instruction records and {"text": ...} for text records.
//
// Files are written to temporaries in the output directory and renamed into
// place only when both are complete; on failure the temporaries are removed.
// Thread-safety: none needed; one call at a time per output directory.
#ifndef TRAINSCOPE_TRAINING_DATA_PREPARE_DATA_H_
#define TRAINSCOPE_TRAINING_DATA_PREPARE_DATA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "options/data_options.h"
#include "training/tokenizers/tokenizer.h"

namespace trainscope::training {

struct PrepareOptions {
  std::string input;                // a JSONL file (required)
  std::string out_dir;              // created if missing (required)
  int64_t max_seq_length = 0;       // tokens; 0 = no limit. Default 0
  double valid_fraction = 0.2;      // in [0, 1). Default 0.2
  uint64_t seed = 1234;             // shuffle seed. Default 1234
  std::string text_field = "text";  // field of text records. Default "text"
  int64_t max_record_bytes = options::kDefaultMaxRecordBytes;  // longest line. Default 64 MiB
};

struct PrepareResult {
  int64_t read = 0;  // non-blank lines
  int64_t kept = 0;
  int64_t dropped_too_long = 0;  // over max_seq_length tokens
  int64_t dropped_bad = 0;       // malformed JSON, missing field, bad UTF-8
  int64_t train = 0;
  int64_t valid = 0;
  int64_t max_tokens_kept = 0;           // longest kept example, in tokens
  std::vector<std::string> bad_samples;  // the first few bad-record messages
  std::string train_path;
  std::string valid_path;
};

// Throws trainscope::Error for a missing input, a bad option, an unwritable
// output directory, or when no example is kept (then nothing is written).
PrepareResult prepare_data(const PrepareOptions& options, const Tokenizer& tokenizer);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_DATA_PREPARE_DATA_H_
