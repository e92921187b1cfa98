// The tokenizer a --tokenizer spec names: the one place that knows every
// kind of tokenizer (the interface is training/tokenizers/tokenizer.h).
#ifndef TRAINSCOPE_TRAINING_TOKENIZERS_MAKE_TOKENIZER_H_
#define TRAINSCOPE_TRAINING_TOKENIZERS_MAKE_TOKENIZER_H_

#include <memory>
#include <string_view>

#include "training/tokenizers/tokenizer.h"

namespace trainscope::training {

// "byte", or "gpt2:PATH" where PATH is a directory holding vocab.json +
// merges.txt, or encoder.json + vocab.bpe, or tokenizer.json, or is such a
// tokenizer.json file. Throws trainscope::Error naming the spec or file.
std::unique_ptr<Tokenizer> make_tokenizer(std::string_view spec);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_TOKENIZERS_MAKE_TOKENIZER_H_
