// Fuzzes the GPT-2 vocabulary files under OpenAI's names, read by
// Gpt2Tokenizer::load: encoder.json (token -> id, through the JSON reader)
// and vocab.bpe (a "#version" line, then one merge "left right" per line).
//
// Input: encoder.json, a NUL byte, vocab.bpe (JSON text holds no raw NUL).
// A tokenizer that loads must round-trip a sample text and the input itself.
#include <string_view>

#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/tokenizer_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainscope;
  const std::string_view input = fuzz::as_text(data, size);
  const std::size_t nul = input.find('\0');
  const fuzz::ScratchDir& dir = fuzz::ScratchDir::get();
  dir.write("encoder.json", {input.substr(0, nul)});
  dir.write("vocab.bpe", {nul == std::string_view::npos ? "" : input.substr(nul + 1)});
  const auto tokenizer =
      fuzz::parse_or_reject([&] { return training::Gpt2Tokenizer::load(dir.path().string()); });
  if (tokenizer) {
    fuzz::encode_checked(**tokenizer, fuzz::kSampleText);
    fuzz::encode_checked(**tokenizer, input);
  }
  return 0;
}
