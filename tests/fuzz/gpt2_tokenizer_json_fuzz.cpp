// Fuzzes a Hugging Face tokenizer.json read by Gpt2Tokenizer::load: the
// checks that it is GPT-2's byte-level BPE (model.type, pre_tokenizer, the
// options that would change the ids), model.vocab, and model.merges in both
// forms ("left right" and ["left", "right"]).
//
// A tokenizer that loads must round-trip a sample text and the input itself.
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/tokenizer_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainscope;
  const std::string_view input = fuzz::as_text(data, size);
  const std::string path = fuzz::ScratchDir::get().write("tokenizer.json", {input});
  const auto tokenizer = fuzz::parse_or_reject([&] { return training::Gpt2Tokenizer::load(path); });
  if (tokenizer) {
    fuzz::encode_checked(**tokenizer, fuzz::kSampleText);
    fuzz::encode_checked(**tokenizer, input);
  }
  return 0;
}
