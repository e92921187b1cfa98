#include "training/kv_decoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "base/check.h"
#include "kernels/matmul.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"

namespace trainscope::training {
namespace k = trainscope::kernels;
using kernels::MemoryCategory;

KvDecoder::KvDecoder(const ModelConfig& config, std::span<const float> params, int max_tokens,
                     int logit_rows)
    : config_(config),
      layout_(config),
      params_(params),
      max_(max_tokens),
      logit_rows_(logit_rows > 0 ? logit_rows : config.vocab_size) {
  TS_CHECK(static_cast<int64_t>(params.size()) == layout_.total());
  TS_CHECK(logit_rows_ <= config.vocab_size)
      << logit_rows_ << " logit rows of " << config.vocab_size;
  if (max_tokens <= 0 || max_tokens > config.max_seq_len) {
    throw Error(
        fmt::format("{} tokens (prompt and generation) do not fit the model's {} "
                    "positions ({})",
                    max_tokens, config.max_seq_len, config.name));
  }
  const int64_t KV = config.kv_dim(), Q = config.q_dim(), C = config.dim, F = config.mlp_dim;
  cache_ = k::Buffer<float>(int64_t{config.n_layers} * 2 * max_ * KV, MemoryCategory::kActivations);
  const int half = config.head_dim() / 2;
  rope_cos_ = k::Buffer<float>(int64_t{max_} * half, MemoryCategory::kWorkspace);
  rope_sin_ = k::Buffer<float>(int64_t{max_} * half, MemoryCategory::kWorkspace);
  k::rope_tables(rope_cos_.data(), rope_sin_.data(), max_, config.head_dim(), config.rope_theta);
  const int64_t sizes[] = {C, C, 1, Q + 2 * KV, Q, C, 2 * F, F, max_, logit_rows_};
  scratch_ = k::Buffer<float>(std::accumulate(std::begin(sizes), std::end(sizes), int64_t{0}),
                              MemoryCategory::kWorkspace);
  float* p = scratch_.data();
  float** views[] = {&x_, &ln_, &rstd_, &qkv_, &atty_, &tmp_, &gu_, &h_, &scores_, &logits_};
  for (int i = 0; i < 10; ++i) {
    *views[i] = p;
    p += sizes[i];
  }
}

// Every query head against the cached keys of its kv head, positions 0..pos_.
void KvDecoder::attend(int layer) {
  const int NH = config_.n_heads, hd = config_.head_dim(), group = NH / config_.kv_heads();
  const int64_t KV = config_.kv_dim();
  const float* keys = cache_.data() + (int64_t{layer} * 2) * max_ * KV;
  const float* values = keys + int64_t{max_} * KV;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int h = 0; h < NH; ++h) {
    const float* q = qkv_ + int64_t{h} * hd;
    const int64_t kv_off = int64_t{h / group} * hd;
    float mx = -INFINITY;
    for (int t = 0; t <= pos_; ++t) {
      const float* kt = keys + t * KV + kv_off;
      float s = 0;
      for (int i = 0; i < hd; ++i) s += q[i] * kt[i];
      scores_[t] = s * scale;
      mx = std::max(mx, scores_[t]);
    }
    float sum = 0;
    for (int t = 0; t <= pos_; ++t) sum += scores_[t] = std::exp(scores_[t] - mx);
    float* out = atty_ + int64_t{h} * hd;
    std::fill(out, out + hd, 0.0f);
    for (int t = 0; t <= pos_; ++t) {
      const float* vt = values + t * KV + kv_off;
      const float w = scores_[t] / sum;
      for (int i = 0; i < hd; ++i) out[i] += w * vt[i];
    }
  }
}

const float* KvDecoder::step(int32_t token) {
  const ModelConfig& c = config_;
  if (pos_ >= max_) throw Error(fmt::format("the key/value cache is full ({} positions)", max_));
  if (token < 0 || token >= c.vocab_size) {
    throw Error(
        fmt::format("token id {} is outside the model's vocabulary of {}", token, c.vocab_size));
  }
  const int C = c.dim, F = c.mlp_dim, NH = c.n_heads, NKV = c.kv_heads(), hd = c.head_dim();
  const int Q = c.q_dim(), KV = c.kv_dim(), W = Q + 2 * KV, half = hd / 2;
  const float* P = params_.data();
  std::memcpy(x_, P + layout_.embed() + int64_t{token} * C, sizeof(float) * C);
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerOffsets& w = layout_.layer(l);
    if (l == 0) {
      k::rmsnorm_forward(ln_, rstd_, x_, P + w.input_norm, 1, C, c.norm_eps);
    } else {  // the layer below's MLP output, added here (as LlamaModel does)
      k::add_rmsnorm_forward(x_, ln_, rstd_, tmp_, P + w.input_norm, 1, C, c.norm_eps);
    }
    k::matvec_forward(qkv_, ln_, P + w.qkv, C, W);
    const float* cs = rope_cos_.data() + int64_t{pos_} * half;
    const float* sn = rope_sin_.data() + int64_t{pos_} * half;
    k::rope_forward(qkv_, cs, sn, 1, 1, NH + NKV, hd, W);  // q's heads and k's
    float* keys = cache_.data() + (int64_t{l} * 2) * max_ * KV;
    std::memcpy(keys + int64_t{pos_} * KV, qkv_ + Q, sizeof(float) * KV);
    std::memcpy(keys + int64_t{max_} * KV + int64_t{pos_} * KV, qkv_ + Q + KV, sizeof(float) * KV);
    attend(l);
    k::matvec_forward(tmp_, atty_, P + w.o_proj, Q, C);
    k::add_rmsnorm_forward(x_, ln_, rstd_, tmp_, P + w.post_norm, 1, C, c.norm_eps);
    k::matvec_forward(gu_, ln_, P + w.gate_up, C, 2 * F);
    k::swiglu_forward(h_, gu_, 1, F);
    k::matvec_forward(tmp_, h_, P + w.down, F, C);
  }
  k::add_rmsnorm_forward(x_, ln_, rstd_, tmp_, P + layout_.final_norm(), 1, C, c.norm_eps);
  k::matvec_forward(logits_, ln_, P + layout_.lm_head(), C, logit_rows_);
  ++pos_;
  return logits_;
}

int32_t sample_token(std::span<const float> logits, float temperature, float top_p,
                     std::mt19937_64& rng) {
  const auto V = static_cast<int32_t>(logits.size());
  if (temperature <= 0) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  const float mx = *std::max_element(logits.begin(), logits.end());
  // Kept between calls: a 50k-entry buffer per token would be fresh pages
  // every time.
  thread_local std::vector<std::pair<double, int32_t>> probs;
  probs.resize(static_cast<std::size_t>(V));
  double sum = 0;
  for (int32_t i = 0; i < V; ++i) {
    probs[i] = {std::exp(static_cast<double>(logits[i] - mx) / temperature), i};
    sum += probs[i].first;
  }
  std::size_t n = probs.size();
  double kept = sum;
  if (top_p < 1) {
    // The nucleus: the most likely tokens until their mass reaches top_p.
    // Only the head is ordered (sorting all of a 50k vocabulary every token
    // costs milliseconds), growing until it holds the nucleus; the order is
    // total (ties by id), so the nucleus is the full sort's.
    const auto likelier = [](const auto& a, const auto& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    };
    for (std::size_t head = std::min<std::size_t>(64, probs.size());;
         head = std::min(probs.size(), 4 * head)) {
      std::partial_sort(probs.begin(), probs.begin() + static_cast<std::ptrdiff_t>(head),
                        probs.end(), likelier);
      kept = 0;
      n = 0;
      while (n < head && (n == 0 || kept < top_p * sum)) kept += probs[n++].first;
      if (kept >= top_p * sum || head == probs.size()) break;
    }
  }
  double draw = std::uniform_real_distribution<double>(0.0, kept)(rng);
  for (std::size_t i = 0; i < n; ++i) {
    draw -= probs[i].first;
    if (draw < 0) return probs[i].second;
  }
  return probs[n - 1].second;
}

}  // namespace trainscope::training
