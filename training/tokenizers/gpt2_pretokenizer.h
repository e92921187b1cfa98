// GPT-2's pre-tokenizer: splits text into the pieces that BPE then encodes one
// by one, exactly as encoder.py's regex does,
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// but as a hand-written scanner over UTF-8 (std::regex is far too slow and
// knows nothing of \p{L}). Contractions are case-sensitive, as in GPT-2 ("'S"
// is punctuation then a letter). A byte that is not valid UTF-8 counts as one
// [^\s\p{L}\p{N}] character, so any byte string splits and round-trips.
//
// Thread-safety: pure functions.
#ifndef TRAINSCOPE_TRAINING_TOKENIZERS_GPT2_PRETOKENIZER_H_
#define TRAINSCOPE_TRAINING_TOKENIZERS_GPT2_PRETOKENIZER_H_

#include <cstddef>
#include <string_view>
#include <vector>

namespace trainscope::training {

// Length in bytes of the regex match that starts at text[pos]; pos < size().
std::size_t gpt2_piece_length(std::string_view text, std::size_t pos);

// All pieces of `text`, in order; they concatenate back to `text`. Does not
// treat "<|endoftext|>" specially (the tokenizer splits it out first).
std::vector<std::string_view> gpt2_pretokenize(std::string_view text);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_TOKENIZERS_GPT2_PRETOKENIZER_H_
