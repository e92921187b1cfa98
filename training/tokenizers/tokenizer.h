// Tokenizers turn text into token ids and back.
//
// A Tokenizer is immutable after construction and safe to use from several
// threads at once. Every tokenizer has an end-of-text token, used to separate
// and pad documents; the literal text "<|endoftext|>" inside the input encodes
// to it (as GPT-2's tokenizer does).
#ifndef TRAINSCOPE_TRAINING_TOKENIZERS_TOKENIZER_H_
#define TRAINSCOPE_TRAINING_TOKENIZERS_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace trainscope::training {

inline constexpr std::string_view kEndOfText = "<|endoftext|>";

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Appends the ids of `text` to *out.
  virtual void encode(std::string_view text, std::vector<int32_t>* out) const = 0;
  // The text of `ids`; bytes that do not form valid UTF-8 are kept as they are.
  // Throws trainscope::Error for an id outside [0, vocab_size()).
  virtual std::string decode(std::span<const int32_t> ids) const = 0;

  // Number of ids; every id is in [0, vocab_size()).
  virtual int32_t vocab_size() const = 0;
  virtual int32_t eot_id() const = 0;
  // The spec that recreates it: "byte" or "gpt2:/path/to/dir".
  virtual std::string spec() const = 0;

  std::vector<int32_t> encode(std::string_view text) const {
    std::vector<int32_t> ids;
    encode(text, &ids);
    return ids;
  }
};

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_TOKENIZERS_TOKENIZER_H_
