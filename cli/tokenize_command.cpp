// `trainscope tokenize`: text on stdin -> one line of token ids per input line,
// or with --decode the reverse. A way to inspect what a tokenizer does to a
// corpus, and to produce or check id files by hand.
#include <sys/stat.h>
#include <unistd.h>

#include <iostream>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "base/check.h"
#include "training/tokenizers/tokenize_lines.h"
#include "training/tokenizers/make_tokenizer.h"

namespace trainscope::cli {

namespace {
struct TokenizeOptions {
  std::string tokenizer = "byte";
  bool decode = false;
};
}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto options = std::make_shared<TokenizeOptions>();
  auto* cmd = app.add_subcommand(
      "tokenize",
      "Tokenize text read on stdin: print, for each input line, its token ids separated by\n"
      "spaces (the line's newline is not encoded). With --decode, read lines of ids and\n"
      "print each line's text. Output is written only once all input has been processed,\n"
      "so a bad input line leaves no partial output.");
  cmd->add_option("--tokenizer", options->tokenizer,
                  "Tokenizer spec: 'byte' (ids 0-255 are bytes, 256 is <|endoftext|>) or\n"
                  "'gpt2:PATH' (GPT-2 byte-level BPE; PATH is a directory with vocab.json +\n"
                  "merges.txt, encoder.json + vocab.bpe or tokenizer.json, or a tokenizer.json\n"
                  "file). The literal text <|endoftext|> encodes to the end-of-text id.")
      ->default_val("byte");
  cmd->add_flag("--decode", options->decode,
                "Decode instead: each stdin line holds ids separated by spaces; an id outside\n"
                "the vocabulary is an error naming its line. Default: off (encode).");
  cmd->callback([options] {
    struct stat in {};
    if (::fstat(STDIN_FILENO, &in) == 0 && S_ISDIR(in.st_mode)) {
      throw Error("standard input is a directory: give text on stdin (tokenize < FILE)");
    }
    const auto tokenizer = training::make_tokenizer(options->tokenizer);
    std::ios::sync_with_stdio(false);
    std::ostringstream out;
    if (options->decode) {
      training::decode_lines(*tokenizer, std::cin, out, "stdin");
    } else {
      training::encode_lines(*tokenizer, std::cin, out);
    }
    if (std::cin.bad()) throw Error("cannot read standard input", kExitFailure);
    std::cout << out.view();
    std::cout.flush();
  });
}

}  // namespace trainscope::cli
