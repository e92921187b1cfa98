#include "training/llama_model.h"

#include <fmt/format.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <random>

#include "kernels/attention.h"
#include "kernels/check.h"
#include "kernels/elementwise.h"
#include "kernels/embedding.h"
#include "kernels/matmul.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/softmax_xent.h"
#include "kernels/swiglu.h"

namespace trainscope::training {
namespace k = trainscope::kernels;
using kernels::MemoryCategory;

namespace {
// Per-layer forward activations, in elements, at these offsets of a layer slot.
struct LayerActs {
  int64_t ln1, rstd1, qkv, att, atty, res_mid, ln2, rstd2, gu, h, size;
};
LayerActs layer_acts(const ModelConfig& c, int B, int T) {
  const int64_t N = int64_t{B} * T, C = c.dim, F = c.mlp_dim, Q = c.q_dim(), KV = c.kv_dim();
  LayerActs a{};
  int64_t o = 0;
  auto take = [&](int64_t n) { const int64_t at = o; o += n; return at; };
  a.ln1 = take(N * C);
  a.rstd1 = take(N);
  a.qkv = take(N * (Q + 2 * KV));
  a.att = take(int64_t{B} * c.n_heads * T * T);
  a.atty = take(N * Q);
  a.res_mid = take(N * C);
  a.ln2 = take(N * C);
  a.rstd2 = take(N);
  a.gu = take(N * 2 * F);
  a.h = take(N * F);
  a.size = o;
  return a;
}
}  // namespace

template <typename T>
int64_t LlamaModel<T>::activation_elements(const ModelConfig& c, int B, int Tn) {
  const int64_t N = int64_t{B} * Tn;
  // residual stream (L+1) x N x C, the blocks, final norm + rstd, logits.
  return (c.n_layers + 1) * N * c.dim + c.n_layers * layer_acts(c, B, Tn).size + N * c.dim + N +
         N * c.vocab_size;
}

template <typename T>
int64_t LlamaModel<T>::workspace_elements(const ModelConfig& c, int B, int Tn, int threads) {
  const int64_t N = int64_t{B} * Tn, C = c.dim, F = c.mlp_dim, Q = c.q_dim(), KV = c.kv_dim();
  // dres, dln [N, C]; datty [N, Q]; dqkv [N, Q + 2KV]; dgu [N, 2F]; dh [N, F]; attention scratch.
  return N * (2 * C + 2 * Q + 2 * KV + 3 * F) +
         static_cast<int64_t>(k::attention_workspace_size(Tn, threads));
}

template <typename T>
double LlamaModel<T>::train_flops(const ModelConfig& c, int B, int Tn) {
  const double C = c.dim, F = c.mlp_dim, V = c.vocab_size, L = c.n_layers, Q = c.q_dim(),
               KV = c.kv_dim();
  const double non_embedding = L * (C * (2 * Q + 2 * KV) + 3 * C * F + 2 * C) + C + V * C;
  const double tokens = double(B) * Tn;
  return tokens * (6 * non_embedding + 12 * L * Tn * Q);
}

template <typename T>
LlamaModel<T>::LlamaModel(const ModelConfig& config, int rows, int seq_len,
                          std::span<T> grad_storage)
    : config_(config), layout_(config), B_(rows), T_(seq_len), N_(rows * seq_len) {
  config_.validate();
  if (rows <= 0) throw Error(fmt::format("batch rows must be positive, got {}", rows));
  if (seq_len <= 0) throw Error(fmt::format("sequence length must be positive, got {}", seq_len));
  if (seq_len > config.max_seq_len) {
    throw Error(fmt::format("sequence length {} exceeds the model's max sequence {} ({})", seq_len,
                            config.max_seq_len, config.name));
  }
  threads_ = omp_get_max_threads();
  const int64_t C = config.dim;
  params_ = k::Buffer<T>(layout_.total(), MemoryCategory::kParameters);
  if (grad_storage.empty()) {
    owned_grads_ = k::Buffer<T>(layout_.total(), MemoryCategory::kGradients);
    grads_ = owned_grads_.span();
  } else {
    TS_CHECK(static_cast<int64_t>(grad_storage.size()) == layout_.total())
        << "gradient storage of " << grad_storage.size() << " for " << layout_.total();
    grads_ = grad_storage;
  }
  acts_ = k::Buffer<T>(activation_elements(config, B_, T_), MemoryCategory::kActivations);
  scratch_ = k::Buffer<T>(workspace_elements(config, B_, T_, threads_), MemoryCategory::kWorkspace);
  const int half = config.head_dim() / 2;
  rope_cos_ = k::Buffer<T>(int64_t{config.max_seq_len} * half, MemoryCategory::kWorkspace);
  rope_sin_ = k::Buffer<T>(int64_t{config.max_seq_len} * half, MemoryCategory::kWorkspace);
  k::rope_tables(rope_cos_.data(), rope_sin_.data(), config.max_seq_len, config.head_dim(),
                 config.rope_theta);

  T* p = acts_.data();
  res_ = p;
  p += (config.n_layers + 1) * int64_t{N_} * C;
  layer_stride_ = layer_acts(config, B_, T_).size;
  layer0_ = p;
  p += config.n_layers * layer_stride_;
  lnf_ = p;
  p += int64_t{N_} * C;
  rstdf_ = p;
  p += N_;
  logits_ = p;
  p += int64_t{N_} * config.vocab_size;
  TS_CHECK(p == acts_.data() + acts_.size());

  T* s = scratch_.data();
  auto take = [&](int64_t n) { T* at = s; s += n; return at; };
  dres_ = take(int64_t{N_} * C);
  dln_ = take(int64_t{N_} * C);
  datty_ = take(int64_t{N_} * config.q_dim());
  dqkv_ = take(int64_t{N_} * (config.q_dim() + 2 * config.kv_dim()));
  dgu_ = take(int64_t{N_} * 2 * config.mlp_dim);
  dh_ = take(int64_t{N_} * config.mlp_dim);
  att_ws_ = take(static_cast<int64_t>(k::attention_workspace_size(T_, threads_)));
  TS_CHECK(s == scratch_.data() + scratch_.size());
}

template <typename T>
void LlamaModel<T>::init_weights(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 0.02);
  for (const TensorSpec& t : layout_.tensors()) {
    T* w = params_.data() + t.offset;
    const bool is_norm = t.shape.size() == 1;
    for (int64_t i = 0; i < t.numel; ++i) w[i] = is_norm ? T(1) : static_cast<T>(normal(rng));
  }
}

template <typename T>
void LlamaModel<T>::embed_and_check(const int32_t* inputs) {
  for (int i = 0; i < N_; ++i) {
    if (inputs[i] < 0 || inputs[i] >= config_.vocab_size) {
      throw Error(fmt::format("token id {} at row {} column {} is outside the model's vocabulary "
                              "of {}",
                              inputs[i], i / T_, i % T_, config_.vocab_size));
    }
  }
  k::embedding_forward(res_, inputs, params_.data() + layout_.embed(), N_, config_.dim);
}

template <typename T>
void LlamaModel<T>::run_layers() {
  const int C = config_.dim, F = config_.mlp_dim, NH = config_.n_heads, hd = config_.head_dim();
  const int NKV = config_.kv_heads(), Q = config_.q_dim(), KV = config_.kv_dim(), W = Q + 2 * KV;
  const T* P = params_.data();
  for (int l = 0; l < config_.n_layers; ++l) {
    const LayerOffsets& w = layout_.layer(l);
    const LayerActs a = layer_acts(config_, B_, T_);
    T* base = layer0_ + l * layer_stride_;
    const T* x = res_ + int64_t{l} * N_ * C;
    T* out = res_ + int64_t{l + 1} * N_ * C;
    T* qkv = base + a.qkv;
    k::rmsnorm_forward(base + a.ln1, base + a.rstd1, x, P + w.input_norm, N_, C, config_.norm_eps);
    k::matmul_forward(qkv, base + a.ln1, P + w.qkv, N_, C, W);
    k::rope_forward(qkv, rope_cos_.data(), rope_sin_.data(), B_, T_, NH, hd, W);
    k::rope_forward(qkv + Q, rope_cos_.data(), rope_sin_.data(), B_, T_, NKV, hd, W);
    k::attention_forward(base + a.atty, base + a.att, qkv, qkv + Q, qkv + Q + KV, B_, T_, NH, NKV,
                         hd, W);
    // res_mid = x + o_proj(atty); out = res_mid + down(swiglu(gate_up(ln2)))
    k::matmul_forward(base + a.res_mid, base + a.atty, P + w.o_proj, N_, Q, C);
    k::add_forward(base + a.res_mid, base + a.res_mid, x, int64_t{N_} * C);
    k::rmsnorm_forward(base + a.ln2, base + a.rstd2, base + a.res_mid, P + w.post_norm, N_, C,
                       config_.norm_eps);
    k::matmul_forward(base + a.gu, base + a.ln2, P + w.gate_up, N_, C, 2 * F);
    k::swiglu_forward(base + a.h, base + a.gu, N_, F);
    k::matmul_forward(out, base + a.h, P + w.down, N_, F, C);
    k::add_forward(out, out, base + a.res_mid, int64_t{N_} * C);
  }
  const T* last = res_ + int64_t{config_.n_layers} * N_ * C;
  k::rmsnorm_forward(lnf_, rstdf_, last, P + layout_.final_norm(), N_, C, config_.norm_eps);
  k::matmul_forward(logits_, lnf_, P + layout_.lm_head(), N_, C, config_.vocab_size);
}

template <typename T>
ForwardResult LlamaModel<T>::forward(const int32_t* inputs, const int32_t* targets,
                                     double grad_scale) {
  embed_and_check(inputs);
  run_layers();
  ForwardResult r;
  if (targets != nullptr) {
    for (int i = 0; i < N_; ++i) {
      if (targets[i] < -1 || targets[i] >= config_.vocab_size) {
        throw Error(fmt::format("target id {} at row {} column {} is outside the model's "
                                "vocabulary of {}",
                                targets[i], i / T_, i % T_, config_.vocab_size));
      }
    }
    r.loss_sum = k::softmax_xent_forward(logits_, targets, N_, config_.vocab_size, grad_scale,
                                         &r.predicted);
  }
  return r;
}

template <typename T>
const T* LlamaModel<T>::forward_logits(const int32_t* inputs) {
  embed_and_check(inputs);
  run_layers();
  return logits_;
}

template <typename T>
void LlamaModel<T>::zero_grad() {
  std::memset(grads_.data(), 0, grads_.size_bytes());
}

template <typename T>
void LlamaModel<T>::backward(const int32_t* inputs, const GradReadyHook& hook) {
  const int C = config_.dim, F = config_.mlp_dim, NH = config_.n_heads, hd = config_.head_dim();
  const int NKV = config_.kv_heads(), Q = config_.q_dim(), KV = config_.kv_dim(), W = Q + 2 * KV;
  const int V = config_.vocab_size;
  const int64_t NC = int64_t{N_} * C;
  const T* P = params_.data();
  T* G = grads_.data();
  auto zero = [](T* x, int64_t n) { std::memset(x, 0, sizeof(T) * n); };
  TS_CHECK(omp_get_max_threads() <= threads_)
      << "thread count raised after the model sized its workspace";

  // Head: logits_ holds grad_scale * dloss/dlogits.
  zero(dln_, NC);
  k::matmul_backward(dln_, G + layout_.lm_head(), logits_, lnf_, P + layout_.lm_head(), N_, C, V);
  // Tied, the head's gradient is the embedding's, final only at the end.
  if (hook && !config_.tie_embeddings) hook(layout_.lm_head());
  zero(dres_, NC);
  const T* last = res_ + int64_t{config_.n_layers} * NC;
  k::rmsnorm_backward(dres_, G + layout_.final_norm(), dln_, last, P + layout_.final_norm(),
                      rstdf_, N_, C);
  if (hook) hook(layout_.final_norm());

  for (int l = config_.n_layers - 1; l >= 0; --l) {
    const LayerOffsets& w = layout_.layer(l);
    const LayerActs a = layer_acts(config_, B_, T_);
    T* base = layer0_ + l * layer_stride_;
    const T* x = res_ + int64_t{l} * NC;
    const T* qkv = base + a.qkv;
    // dres = d(out). MLP branch: out = res_mid + down(h).
    zero(dh_, int64_t{N_} * F);
    k::matmul_backward(dh_, G + w.down, dres_, base + a.h, P + w.down, N_, F, C);
    if (hook) hook(w.down);
    zero(dgu_, int64_t{N_} * 2 * F);
    k::swiglu_backward(dgu_, dh_, base + a.gu, N_, F);
    zero(dln_, NC);
    k::matmul_backward(dln_, G + w.gate_up, dgu_, base + a.ln2, P + w.gate_up, N_, C, 2 * F);
    if (hook) hook(w.gate_up);
    k::rmsnorm_backward(dres_, G + w.post_norm, dln_, base + a.res_mid, P + w.post_norm,
                        base + a.rstd2, N_, C);
    if (hook) hook(w.post_norm);
    // dres = d(res_mid). Attention branch: res_mid = x + o_proj(atty).
    zero(datty_, int64_t{N_} * Q);
    k::matmul_backward(datty_, G + w.o_proj, dres_, base + a.atty, P + w.o_proj, N_, Q, C);
    if (hook) hook(w.o_proj);
    zero(dqkv_, int64_t{N_} * W);
    k::attention_backward(dqkv_, dqkv_ + Q, dqkv_ + Q + KV, att_ws_, datty_, base + a.att, qkv,
                          qkv + Q, qkv + Q + KV, B_, T_, NH, NKV, hd, W);
    k::rope_backward(dqkv_, rope_cos_.data(), rope_sin_.data(), B_, T_, NH, hd, W);
    k::rope_backward(dqkv_ + Q, rope_cos_.data(), rope_sin_.data(), B_, T_, NKV, hd, W);
    zero(dln_, NC);
    k::matmul_backward(dln_, G + w.qkv, dqkv_, base + a.ln1, P + w.qkv, N_, C, W);
    if (hook) hook(w.qkv);
    k::rmsnorm_backward(dres_, G + w.input_norm, dln_, x, P + w.input_norm, base + a.rstd1, N_, C);
    // dres = d(x) = d(res[l]).
    if (hook) hook(w.begin);
  }
  k::embedding_backward(G + layout_.embed(), dres_, inputs, N_, C);
  if (hook) hook(0);
}

template class LlamaModel<float>;
template class LlamaModel<double>;

}  // namespace trainscope::training
