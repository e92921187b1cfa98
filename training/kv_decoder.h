// KvDecoder: token-by-token inference over a model's parameters with a
// key/value cache (each layer's rotated keys and values of every position
// so far), so a new token costs one pass over the weights rather than a
// forward over the whole sequence. The same kernels as LlamaModel's forward
// (rmsnorm, matmul, rope, swiglu) at one row; attention over the cache in
// plain loops (one query row). Grouped-query attention and tied embeddings
// as the model has them.
//
// Memory, allocated once: the cache (2 x layers x max_tokens x kv_dim floats,
// category activations) and one token's scratch (category workspace).
//
// Not thread-safe; the parameters must outlive it and not change while it
// decodes.
#ifndef TRAINSCOPE_TRAINING_KV_DECODER_H_
#define TRAINSCOPE_TRAINING_KV_DECODER_H_

#include <cstdint>
#include <random>
#include <span>

#include "kernels/storage.h"
#include "training/model_config.h"
#include "training/param_layout.h"

namespace trainscope::training {

class KvDecoder {
 public:
  // max_tokens: positions the cache holds (prompt + generated), at most the
  // model's max_seq_len (Error otherwise). logit_rows: the output rows
  // computed, the first ones of the vocabulary (0: all). A vocabulary padded
  // beyond its tokenizer's ids (seed's 50257 rows for the 257 byte ids)
  // would otherwise spend most of each token reading rows nobody samples.
  KvDecoder(const ModelConfig& config, std::span<const float> params, int max_tokens,
            int logit_rows = 0);

  // Feeds `token` at the next position; returns the logits of the token
  // after it ([logit_rows()]), valid until the next call. Error when the
  // cache is full or the token is outside the vocabulary.
  const float* step(int32_t token);
  int logit_rows() const { return logit_rows_; }
  int position() const { return pos_; }
  int capacity() const { return max_; }
  void reset() { pos_ = 0; }

 private:
  void attend(int layer);

  ModelConfig config_;
  ParamLayout layout_;
  std::span<const float> params_;
  int max_ = 0, pos_ = 0, logit_rows_ = 0;
  kernels::Buffer<float> cache_;  // [layers][2][max][kv_dim]
  kernels::Buffer<float> rope_cos_, rope_sin_;
  kernels::Buffer<float> scratch_;
  float *x_, *ln_, *rstd_, *qkv_, *atty_, *tmp_, *gu_, *h_, *scores_, *logits_;
};

// The next token from `logits` [vocab]: the largest (lowest id on ties)
// when temperature <= 0; else drawn from softmax(logits / temperature)
// restricted to the smallest set of most likely tokens whose probability
// reaches top_p (nucleus sampling; top_p >= 1 keeps all).
int32_t sample_token(std::span<const float> logits, float temperature, float top_p,
                     std::mt19937_64& rng);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_KV_DECODER_H_
