// Fuzzes GPT-2 encoding of arbitrary bytes with the real vocabulary
// ($TRAINSCOPE_GPT2_DIR, else ../shared/data/gpt2 beside the source tree):
// the pre-tokenizer on invalid UTF-8 and odd Unicode, BPE, end-of-text
// splitting. Every input must round-trip, and the three word caches must
// give the same ids.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/tokenizer_checks.h"

namespace trainscope::fuzz {
namespace {

using training::Gpt2Tokenizer;
using training::WordCache;

struct Tokenizers {
  std::unique_ptr<Gpt2Tokenizer> thread_local_cache, sharded_cache, no_cache;
};

const Tokenizers& gpt2() {
  static const Tokenizers tokenizers = [] {
    const char* env = std::getenv("TRAINSCOPE_GPT2_DIR");
    const std::string dir = env && *env ? env : TRAINSCOPE_SOURCE_DIR "/../shared/data/gpt2";
    if (!std::filesystem::exists(std::filesystem::path(dir) / "encoder.json")) {
      std::fprintf(stderr,
                   "gpt2_encode_fuzz: no GPT-2 vocabulary in %s (set TRAINSCOPE_GPT2_DIR)\n",
                   dir.c_str());
      std::exit(1);
    }
    return Tokenizers{Gpt2Tokenizer::load(dir, {.cache = WordCache::kThreadLocal}),
                      Gpt2Tokenizer::load(dir, {.cache = WordCache::kSharded}),
                      Gpt2Tokenizer::load(dir, {.cache = WordCache::kNone})};
  }();
  return tokenizers;
}

}  // namespace
}  // namespace trainscope::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  trainscope::fuzz::gpt2();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainscope::fuzz;
  const std::string_view text = as_text(data, size);
  const Tokenizers& t = gpt2();
  const auto ids = encode_checked(*t.no_cache, text);
  TS_CHECK(encode_checked(*t.thread_local_cache, text) == ids)
      << "the thread-local cache changed the ids";
  TS_CHECK(encode_checked(*t.sharded_cache, text) == ids) << "the sharded cache changed the ids";
  return 0;
}
