#include "training/tokenizers/byte_tokenizer.h"

#include <string>

#include "base/check.h"

namespace trainscope::training {

void ByteTokenizer::encode(std::string_view text, std::vector<int32_t>* out) const {
  out->reserve(out->size() + text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '<' && text.substr(i, kEndOfText.size()) == kEndOfText) {
      out->push_back(kEotId);
      i += kEndOfText.size();
      continue;
    }
    out->push_back(static_cast<unsigned char>(text[i]));
    ++i;
  }
}

std::string ByteTokenizer::decode(std::span<const int32_t> ids) const {
  std::string text;
  text.reserve(ids.size());
  for (int32_t id : ids) {
    if (id == kEotId) {
      text += kEndOfText;
    } else if (id >= 0 && id < 256) {
      text.push_back(static_cast<char>(id));
    } else {
      throw Error("byte tokenizer: token id " + std::to_string(id) + " is outside [0, 257)");
    }
  }
  return text;
}

}  // namespace trainscope::training
