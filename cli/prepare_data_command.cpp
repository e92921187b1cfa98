// trainscope prepare-data: a thin wrapper over training::prepare_data.
#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/validators.h"
#include "training/data/prepare_data.h"
#include "training/tokenizers/make_tokenizer.h"

namespace trainscope::cli {

void add_prepare_data_command(CLI::App& app) {
  auto options = std::make_shared<training::PrepareOptions>();
  auto tokenizer_spec = std::make_shared<std::string>("byte");
  auto* cmd = app.add_subcommand(
      "prepare-data",
      "Turn a JSONL file of chat ({\"messages\": [...]}), instruction\n"
      "({\"instruction\", \"context\", \"response\"}) or text records into DIR/train.jsonl and\n"
      "DIR/valid.jsonl: instruction records become chat messages, examples longer than\n"
      "--max-seq-length tokens are dropped (never truncated), bad records are dropped and\n"
      "counted, the rest is shuffled with --seed and split. Both files are written to\n"
      "temporaries and renamed into place; nothing is left behind on failure.");
  cmd->add_option("input", options->input, "The JSONL file to read")->required();
  cmd->add_option("--out", options->out_dir, "Output directory (created if missing)")->required();
  cmd->add_option("--max-seq-length", options->max_seq_length,
                  "Drop examples with more tokens than this, counting the chat template and the "
                  "final end-of-text; 0 keeps all")
      ->default_val(0)
      ->check(whole_number<int64_t>(0));
  cmd->add_option("--tokenizer", *tokenizer_spec, "Tokenizer that counts tokens: byte or gpt2:PATH")
      ->default_val("byte");
  cmd->add_option("--valid-fraction", options->valid_fraction,
                  "Fraction of kept examples written to valid.jsonl, in [0, 1)")
      ->default_val(0.2)
      ->check(
          number_that("at least 0 and below 1", "[0,1)", [](double x) { return x >= 0 && x < 1; }));
  cmd->add_option("--seed", options->seed, "Seed of the shuffle before the split")
      ->default_val(1234)
      ->check(whole_number<uint64_t>());
  cmd->add_option("--text-field", options->text_field,
                  "Field of text records (records without messages or instruction)")
      ->default_val("text");
  cmd->add_option("--max-record-bytes", options->max_record_bytes,
                  "A longer input line is an error")
      ->default_val(options::kDefaultMaxRecordBytes)
      ->check(whole_number<int64_t>(1));
  cmd->callback([options, tokenizer_spec] {
    const auto tokenizer = training::make_tokenizer(*tokenizer_spec);
    const training::PrepareResult r = training::prepare_data(*options, *tokenizer);
    for (const std::string& bad : r.bad_samples) fmt::print(stderr, "skipped: {}\n", bad);
    fmt::print("read {} records: kept {}, dropped {} ({} over {} tokens, {} bad records)\n", r.read,
               r.kept, r.dropped_too_long + r.dropped_bad, r.dropped_too_long,
               options->max_seq_length, r.dropped_bad);
    fmt::print("longest kept example: {} tokens ({})\n", r.max_tokens_kept, tokenizer->spec());
    fmt::print("wrote {} ({} examples) and {} ({} examples)\n", r.train_path, r.train, r.valid_path,
               r.valid);
  });
}

}  // namespace trainscope::cli
