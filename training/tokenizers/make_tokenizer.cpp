#include "training/tokenizers/make_tokenizer.h"

#include <string>

#include "base/check.h"
#include "training/tokenizers/byte_tokenizer.h"
#include "training/tokenizers/gpt2_tokenizer.h"

namespace trainscope::training {

std::unique_ptr<Tokenizer> make_tokenizer(std::string_view spec) {
  if (spec == "byte") return std::make_unique<ByteTokenizer>();
  if (spec.starts_with("gpt2:")) return Gpt2Tokenizer::load(std::string(spec.substr(5)));
  if (spec == "gpt2") {
    throw Error("tokenizer 'gpt2' needs the directory of its files: gpt2:PATH");
  }
  throw Error("unknown tokenizer '" + std::string(spec) + "' (expected byte or gpt2:PATH)");
}

}  // namespace trainscope::training
