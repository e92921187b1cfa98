#include "training/tokenizers/tokenizer.h"

#include <string>

#include "kernels/check.h"
#include "training/tokenizers/byte_tokenizer.h"

namespace trainscope::training {

std::unique_ptr<Tokenizer> make_tokenizer(std::string_view spec) {
  if (spec == "byte") return std::make_unique<ByteTokenizer>();
  throw Error("unknown tokenizer '" + std::string(spec) + "' (expected byte or gpt2:PATH)");
}

}  // namespace trainscope::training
