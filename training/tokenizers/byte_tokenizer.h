// The byte tokenizer: ids 0..255 are the bytes themselves, 256 is end-of-text.
// No files, no training; useful for tests and as a vocabulary-light default.
#ifndef TRAINSCOPE_TRAINING_TOKENIZERS_BYTE_TOKENIZER_H_
#define TRAINSCOPE_TRAINING_TOKENIZERS_BYTE_TOKENIZER_H_

#include "training/tokenizers/tokenizer.h"

namespace trainscope::training {

class ByteTokenizer final : public Tokenizer {
 public:
  static constexpr int32_t kEotId = 256;

  void encode(std::string_view text, std::vector<int32_t>* out) const override;
  std::string decode(std::span<const int32_t> ids) const override;
  int32_t vocab_size() const override { return 257; }
  int32_t eot_id() const override { return kEotId; }
  std::string spec() const override { return "byte"; }
  using Tokenizer::encode;
};

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_TOKENIZERS_BYTE_TOKENIZER_H_
