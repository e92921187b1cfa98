// What must hold for any byte-level BPE tokenizer that loaded, on any text:
// the ids are in the vocabulary and decode back to the text, byte for byte.
// Shared by the tokenizer fuzz targets; a failure aborts (TS_CHECK).
#ifndef TRAINSCOPE_TESTS_FUZZ_TOKENIZER_CHECKS_H_
#define TRAINSCOPE_TESTS_FUZZ_TOKENIZER_CHECKS_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/check.h"
#include "training/tokenizers/gpt2_tokenizer.h"

namespace trainscope::fuzz {

// The ids of `text`, after checking that they round-trip.
inline std::vector<int32_t> encode_checked(const training::Gpt2Tokenizer& tokenizer,
                                           std::string_view text) {
  std::vector<int32_t> ids;
  tokenizer.encode(text, &ids);
  for (const int32_t id : ids) {
    TS_CHECK(id >= 0 && id < tokenizer.vocab_size()) << "id " << id << " out of range";
  }
  TS_CHECK(tokenizer.decode(ids) == text) << "decode(encode(text)) != text";
  return ids;
}

// A text with words, spaces, digits, punctuation, non-ASCII and end-of-text,
// for tokenizers built from fuzzed vocabularies and merges.
inline constexpr std::string_view kSampleText =
    "Hello world! It's 2024, hello   again\n\tl'll lll <|endoftext|>caf\xc3\xa9 \xe2\x82\xac"
    "5";

}  // namespace trainscope::fuzz

#endif  // TRAINSCOPE_TESTS_FUZZ_TOKENIZER_CHECKS_H_
