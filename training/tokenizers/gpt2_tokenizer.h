// GPT-2's byte-level BPE tokenizer, producing exactly the ids of OpenAI's
// encoder.py (checked against scripts/gpt2_reference_tokenize.py).
//
// Text is split by the GPT-2 pre-tokenizer (gpt2_pretokenizer.h); each piece's
// UTF-8 bytes start as one token per byte and are merged by BPE: repeatedly,
// every left-to-right occurrence of the adjacent pair with the lowest merge
// rank becomes one token. "<|endoftext|>" in the text is split out first and
// encodes to its id. Loads vocab.json + merges.txt, encoder.json + vocab.bpe
// (the same data under OpenAI's names) or a Hugging Face tokenizer.json of
// type BPE with a ByteLevel pre-tokenizer.
//
// Thread-safety: immutable after construction except for the word -> ids
// cache, which is per thread by default (or shared and sharded, one mutex per
// shard; see WordCache). encode and decode may be called from any number of
// threads.
#ifndef TRAINSCOPE_TRAINING_TOKENIZERS_GPT2_TOKENIZER_H_
#define TRAINSCOPE_TRAINING_TOKENIZERS_GPT2_TOKENIZER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "training/tokenizers/tokenizer.h"

namespace trainscope::training {

// Where the ids of words already encoded are remembered; the ids are the same
// either way. bench/tokenizer_bench.cpp measures the three (BM_Gpt2Encode,
// arg cache): the thread-local cache came out fastest, as it takes no mutex
// per word, and a cache of either kind is several times faster than none;
// hence the default.
enum class WordCache {
  kNone,     // every word through BPE: only to measure what a cache buys
  kSharded,  // one cache shared by all threads, 64 mutex-guarded shards
  // One cache per thread (at most 65536 words, kept until the thread ends):
  // no locks, but each thread warms its own, and a thread that alternates
  // between tokenizers empties it at each switch.
  kThreadLocal,
};

struct Gpt2Options {
  WordCache cache = WordCache::kThreadLocal;
};

class Gpt2Tokenizer final : public Tokenizer {
 public:
  // `path` is a directory holding vocab.json + merges.txt, encoder.json +
  // vocab.bpe or tokenizer.json (tried in that order), or a tokenizer.json
  // file. Throws trainscope::Error naming the file (and merges line) at fault.
  static std::unique_ptr<Gpt2Tokenizer> load(const std::string& path, Gpt2Options options = {});

  // From parsed data: `tokens[id]` is the token in GPT-2's byte-to-unicode
  // alphabet (as in encoder.json), `merges` the pairs in rank order, each with
  // where it came from ("merges.txt:12") for error messages. `spec` is what
  // spec() returns. Throws trainscope::Error naming `vocab_source` or the
  // merge's origin when the data is inconsistent.
  struct Merge {
    std::string left;
    std::string right;
    std::string origin;
  };
  Gpt2Tokenizer(const std::vector<std::string>& tokens, const std::vector<Merge>& merges,
                const std::string& vocab_source, std::string spec, Gpt2Options options = {});
  ~Gpt2Tokenizer() override;

  void encode(std::string_view text, std::vector<int32_t>* out) const override;
  std::string decode(std::span<const int32_t> ids) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(token_bytes_.size()); }
  int32_t eot_id() const override { return eot_id_; }
  std::string spec() const override { return spec_; }
  using Tokenizer::encode;

  // The raw bytes of token `id` (which must be in range).
  std::string_view token_bytes(int32_t id) const { return token_bytes_[id]; }

 private:
  struct PairSlot;
  struct CacheShard;
  static constexpr int kNumCacheShards = 64;

  // One pre-tokenized piece.
  void encode_word(std::string_view word, std::vector<int32_t>* out) const;
  // BPE of `word` (at least two bytes), appended to *out.
  void bpe(std::string_view word, std::vector<int32_t>* out) const;
  // Rank and merged id of the pair (left, right); false if they do not merge.
  bool find_pair(int32_t left, int32_t right, int32_t* rank, int32_t* merged) const;

  std::vector<std::string> token_bytes_;  // by id
  std::array<int32_t, 256> byte_ids_{};   // the token of each single byte
  std::vector<PairSlot> pair_table_;      // open addressing, size a power of two
  int pair_shift_ = 64;
  int32_t eot_id_ = -1;
  std::string spec_;
  Gpt2Options options_;
  std::unique_ptr<CacheShard[]> cache_;
  uint64_t instance_id_;  // tells this tokenizer's thread-local cache from others'
};

// GPT-2's reversible map from each byte to a printable character, as UTF-8
// (encoder.py's bytes_to_unicode).
const std::array<std::string, 256>& gpt2_byte_to_unicode();

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_TOKENIZERS_GPT2_TOKENIZER_H_
