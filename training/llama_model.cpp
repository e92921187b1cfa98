#include "training/llama_model.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <type_traits>

#include "kernels/attention.h"
#include "base/check.h"
#include "kernels/elementwise.h"
#include "kernels/embedding.h"
#include "kernels/lora.h"
#include "kernels/matmul.h"
#include "kernels/matmul_bf16.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/softmax_xent.h"
#include "kernels/swiglu.h"
#include "training/model_size.h"

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
  auto take = [&](int64_t n) {
    const int64_t at = o;
    o += n;
    return at;
  };
  a.ln1 = take(N * C);
  a.rstd1 = take(N);
  a.qkv = take(N * (Q + 2 * KV));
  a.att = take(int64_t{B} * c.n_heads * T);  // log-sum-exp per query row
  a.atty = take(N * Q);
  a.res_mid = take(N * C);
  a.ln2 = take(N * C);
  a.rstd2 = take(N);
  a.gu = take(N * 2 * F);
  a.h = take(N * F);
  a.size = o;
  return a;
}

// bf16 copies of a layer's GEMM inputs, at these offsets of a layer's slot;
// the final norm's copy follows the last layer's slot.
struct LayerActs16 {
  int64_t ln1, atty, ln2, h, size;
};
LayerActs16 layer_acts16(const ModelConfig& c, int64_t N) {
  const int64_t C = c.dim;
  return {0, N * C, N * (C + c.q_dim()), N * (2 * C + c.q_dim()),
          N * (2 * C + c.q_dim() + c.mlp_dim)};
}

// x += residual, then its norm. -DTRAINSCOPE_UNFUSED_ADD_RMSNORM=ON undoes
// the fusion (an add pass, then the norm: the same bits, more memory
// traffic): the regression the speed gate's calibration plants.
template <typename T>
void add_then_norm(T* x, T* out, T* rstd, const T* residual, const T* w, int N, int C, float eps) {
#ifdef TRAINSCOPE_UNFUSED_ADD_RMSNORM
  k::add_forward(x, x, residual, static_cast<size_t>(N) * C);
  k::rmsnorm_forward(out, rstd, x, w, N, C, eps);
#else
  k::add_rmsnorm_forward(x, out, rstd, residual, w, N, C, eps);
#endif
}
}  // namespace

template <typename T>
int64_t LlamaModel<T>::activation_elements(const ModelConfig& c, int B, int Tn) {
  const int64_t N = int64_t{B} * Tn;
  // residual stream (L+1) x N x C, the blocks, final norm + rstd (the
  // logits are never held: head_and_loss).
  return (c.n_layers + 1) * N * c.dim + c.n_layers * layer_acts(c, B, Tn).size + N * c.dim + N;
}

template <typename T>
int LlamaModel<T>::head_chunk_rows(const ModelConfig& c, int rows) {
  const int64_t fit = kHeadChunkBytes / (int64_t{c.vocab_size} * static_cast<int64_t>(sizeof(T)));
  return static_cast<int>(
      std::clamp<int64_t>(std::max(fit, kHeadChunkMinRows), 1, std::max(rows, 1)));
}

template <typename T>
int64_t LlamaModel<T>::workspace_elements(const ModelConfig& c, int B, int Tn, int threads) {
  const int64_t N = int64_t{B} * Tn, C = c.dim, F = c.mlp_dim, Q = c.q_dim(), KV = c.kv_dim();
  // dres, dln [N, C]; datty [N, Q]; dqkv [N, Q + 2KV]; dgu [N, 2F]; dh [N, F]; attention
  // scratch; one chunk of the head's logits.
  return N * (2 * C + 2 * Q + 2 * KV + 3 * F) +
         static_cast<int64_t>(k::attention_workspace_size(Tn, threads)) +
         int64_t{head_chunk_rows(c, static_cast<int>(N))} * c.vocab_size;
}

template <typename T>
void LlamaModel<T>::check_memory(int rows, int seq_len, bool own_gradients) const {
  const double bytes_each = sizeof(T);
  const double weights = static_cast<double>(layout_.total()) * bytes_each;
  const double grads =
      own_gradients ? static_cast<double>(trainable_count(config_, lora_)) * bytes_each : 0;
  const double head_chunk =
      double{1} * head_chunk_rows(config_, rows * seq_len) * config_.vocab_size * bytes_each;
  const double acts =
      static_cast<double>(activation_elements(config_, rows, seq_len)) * bytes_each +
      static_cast<double>(workspace_elements(config_, rows, seq_len, threads_)) * bytes_each;
  check_fits_in_memory(
      fmt::format("{}: {} rows x {} tokens (vocab_size {})", config_.name, rows, seq_len,
                  config_.vocab_size),
      weights + grads + acts,
      fmt::format("weights {}, gradients {}, activations and workspace {} of which a chunk of "
                  "the logits {}",
                  k::format_bytes(weights), k::format_bytes(grads), k::format_bytes(acts),
                  k::format_bytes(head_chunk)));
}

template <typename T>
LlamaModel<T>::LlamaModel(const ModelConfig& config, int rows, int seq_len,
                          std::span<T> grad_storage, const std::optional<LoraConfig>& lora,
                          Precision precision)
    : config_(config),
      layout_(config),
      B_(rows),
      T_(seq_len),
      N_(rows * seq_len),
      lora_(lora),
      precision_(precision) {
  config_.validate();
  if (rows <= 0) throw Error(fmt::format("batch rows must be positive, got {}", rows));
  if (seq_len <= 0) throw Error(fmt::format("sequence length must be positive, got {}", seq_len));
  if (seq_len > config.max_seq_len) {
    throw Error(fmt::format("sequence length {} exceeds the model's max sequence {} ({})", seq_len,
                            config.max_seq_len, config.name));
  }
  threads_ = omp_get_max_threads();
  check_memory(rows, seq_len, grad_storage.empty());
  const int64_t C = config.dim;
  params_ = k::Buffer<T>(layout_.total(), MemoryCategory::kParameters);
  if (lora_) lora_layout_.emplace(config_, *lora_);
  const int64_t trainable = lora_ ? lora_layout_->total() : layout_.total();
  if (grad_storage.empty()) {
    owned_grads_ = k::Buffer<T>(trainable, MemoryCategory::kGradients);
    grads_ = owned_grads_.span();
  } else {
    TS_CHECK(static_cast<int64_t>(grad_storage.size()) == trainable)
        << "gradient storage of " << grad_storage.size() << " for " << trainable;
    grads_ = grad_storage;
  }
  if (lora_) {
    const int64_t Nr = int64_t{N_} * lora_->rank;
    int64_t widest = 0;
    for (const LoraAdapter& a : lora_layout_->adapters()) widest = std::max<int64_t>(widest, a.in);
    const int64_t dropped = lora_->dropout > 0 ? int64_t{N_} * widest : 0;
    adapters_ = k::Buffer<T>(trainable, MemoryCategory::kParameters);
    lora_acts_ = k::Buffer<T>(static_cast<int64_t>(lora_layout_->adapters().size()) * Nr,
                              MemoryCategory::kActivations);
    lora_scratch_ = k::Buffer<T>(Nr + 2 * dropped, MemoryCategory::kWorkspace);
    lora_du_ = lora_scratch_.data();
    lora_x_ = lora_du_ + Nr;
    lora_dx_ = lora_x_ + dropped;
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
  TS_CHECK(p == acts_.data() + acts_.size());

  T* s = scratch_.data();
  auto take = [&](int64_t n) {
    T* at = s;
    s += n;
    return at;
  };
  dres_ = take(int64_t{N_} * C);
  dln_ = take(int64_t{N_} * C);
  datty_ = take(int64_t{N_} * config.q_dim());
  dqkv_ = take(int64_t{N_} * (config.q_dim() + 2 * config.kv_dim()));
  dgu_ = take(int64_t{N_} * 2 * config.mlp_dim);
  dh_ = take(int64_t{N_} * config.mlp_dim);
  att_ws_ = take(static_cast<int64_t>(k::attention_workspace_size(T_, threads_)));
  head_rows_ = head_rows_max_ = head_chunk_rows(config, N_);
  head_chunk_ = take(int64_t{head_rows_} * config.vocab_size);
  TS_CHECK(s == scratch_.data() + scratch_.size());
  if (precision_ == Precision::kBf16) allocate_bf16();
}

template <typename T>
void LlamaModel<T>::allocate_bf16() {
  if constexpr (!std::is_same_v<T, float>) {
    throw Error("--precision bf16 trains float models only");
  } else {
    const int64_t C = config_.dim, F = config_.mlp_dim, Q = config_.q_dim(), N = N_;
    const int64_t W = Q + 2 * config_.kv_dim(), V = config_.vocab_size;
    int64_t total = 0;
    auto weight = [&](int64_t offset, int64_t numel) {
      bf16_weights_.push_back({offset, total, numel});
      total += numel;
    };
    for (int l = 0; l < config_.n_layers; ++l) {
      const LayerOffsets& w = layout_.layer(l);
      weight(w.qkv, W * C);
      weight(w.o_proj, C * Q);
      weight(w.gate_up, 2 * F * C);
      weight(w.down, C * F);
    }
    weight(layout_.lm_head(), V * C);
    weights16_ = k::Buffer<uint16_t>(total, MemoryCategory::kParameters);
    acts16_ = k::Buffer<uint16_t>(config_.n_layers * layer_acts16(config_, N).size + N * C,
                                  MemoryCategory::kActivations);
    dout16_ = k::Buffer<uint16_t>(std::max(N * std::max({2 * F, W, C}), head_rows_ * V),
                                  MemoryCategory::kWorkspace);
  }
}

template <typename T>
uint16_t* LlamaModel<T>::act16(int l, int64_t at) {
  if (acts16_.size() == 0) return nullptr;
  return acts16_.data() + l * layer_acts16(config_, N_).size + at;
}

// Once per step: the first forward after the weights may have changed.
template <typename T>
void LlamaModel<T>::refresh_bf16_weights() {
  if constexpr (std::is_same_v<T, float>) {
    if (precision_ != Precision::kBf16 || !weights_changed_) return;
    for (const Bf16Weight& w : bf16_weights_) {
      k::to_bf16(weights16_.data() + w.offset16, params_.data() + w.offset, w.numel);
    }
    weights_changed_ = false;
    ++bf16_weight_copies_;
  }
}

template <typename T>
void LlamaModel<T>::linear_forward(T* out, const T* inp, uint16_t* inp16, int64_t offset, int N,
                                   int C, int OC) {
  if constexpr (std::is_same_v<T, float>) {
    if (precision_ == Precision::kBf16) {
      const auto w = std::ranges::find(bf16_weights_, offset, &Bf16Weight::offset);
      TS_CHECK(w != bf16_weights_.end()) << "no bf16 copy of the weight at " << offset;
      k::to_bf16(inp16, inp, int64_t{N} * C);
      k::matmul_forward_bf16(out, inp16, weights16_.data() + w->offset16, N, C, OC);
      return;
    }
  }
  k::matmul_forward(out, inp, params_.data() + offset, N, C, OC);
}

template <typename T>
void LlamaModel<T>::linear_backward(T* dinp, T* dweight, const T* dout, const T* inp,
                                    const uint16_t* inp16, int64_t offset, int N, int C, int OC) {
  if (precision_ == Precision::kBf16) {
    if constexpr (std::is_same_v<T, float>) k::to_bf16(dout16_.data(), dout, int64_t{N} * OC);
    return linear_backward_rounded(dinp, dweight, inp16, offset, N, C, OC);
  }
  k::matmul_backward(dinp, dweight, dout, inp, params_.data() + offset, N, C, OC);
}

template <typename T>
void LlamaModel<T>::linear_backward_rounded(T* dinp, T* dweight, const uint16_t* inp16,
                                            int64_t offset, int N, int C, int OC) {
  if constexpr (std::is_same_v<T, float>) {
    const auto w = std::ranges::find(bf16_weights_, offset, &Bf16Weight::offset);
    TS_CHECK(w != bf16_weights_.end()) << "no bf16 copy of the weight at " << offset;
    k::matmul_backward_bf16(dinp, dweight, dout16_.data(), inp16, weights16_.data() + w->offset16,
                            N, C, OC);
  } else {
    TS_CHECK(false) << "bf16 GEMMs on a model of another type than float";
  }
}

template <typename T>
void LlamaModel<T>::init_weights(uint64_t seed) {
  weights_changed_ = true;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 0.02);
  for (const TensorSpec& t : layout_.tensors()) {
    T* w = params_.data() + t.offset;
    const bool is_norm = t.shape.size() == 1;
    for (int64_t i = 0; i < t.numel; ++i) w[i] = is_norm ? T(1) : static_cast<T>(normal(rng));
  }
}

template <typename T>
void LlamaModel<T>::init_adapters(uint64_t seed) {
  TS_CHECK(lora_) << "init_adapters without LoRA";
  std::mt19937_64 rng(seed);
  T* w = adapters_.data();
  for (const LoraAdapter& a : lora_layout_->adapters()) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(a.in));
    std::uniform_real_distribution<double> uniform(-bound, bound);
    for (int64_t i = 0; i < int64_t{lora_->rank} * a.in; ++i)
      w[a.a + i] = static_cast<T>(uniform(rng));
    std::fill_n(w + a.b, int64_t{a.out} * lora_->rank, T(0));
  }
}

template <typename T>
uint64_t LlamaModel<T>::dropout_seed_of(const LoraAdapter& a) const {
  return (dropout_seed_ * 0x100000001b3ULL + dropout_forwards_) * 1024 +
         static_cast<uint64_t>(a.index);
}

template <typename T>
void LlamaModel<T>::lora_forward(int l, LoraTarget t, T* out, int ldo, const T* inp) {
  const LoraAdapter* a = lora_layout_ ? lora_layout_->find(l, t) : nullptr;
  if (a == nullptr) return;
  const int r = lora_->rank;
  if (dropout_active_) {
    k::dropout_forward(lora_x_, inp, int64_t{N_} * a->in, static_cast<float>(lora_->dropout),
                       dropout_seed_of(*a));
    inp = lora_x_;
  }
  k::lora_forward(out + a->column, ldo, lora_acts_.data() + int64_t{a->index} * N_ * r, inp,
                  adapters_.data() + a->a, adapters_.data() + a->b, N_, a->in, a->out, r,
                  static_cast<T>(lora_->scale()));
}

template <typename T>
void LlamaModel<T>::lora_backward(int l, LoraTarget t, T* dinp, const T* dout, int ldo,
                                  const T* inp) {
  const LoraAdapter* a = lora_layout_ ? lora_layout_->find(l, t) : nullptr;
  if (a == nullptr) return;
  const int r = lora_->rank;
  const int64_t n = int64_t{N_} * a->in;
  T* dx = dinp;
  if (dropout_active_) {  // the input it saw, regenerated; its gradient goes through the mask
    k::dropout_forward(lora_x_, inp, n, static_cast<float>(lora_->dropout), dropout_seed_of(*a));
    inp = lora_x_;
    if (dinp != nullptr) {
      std::memset(lora_dx_, 0, sizeof(T) * n);
      dx = lora_dx_;
    }
  }
  T* G = grads_.data();
  k::lora_backward(dx, G + a->a, G + a->b, lora_du_, dout + a->column, ldo, inp,
                   lora_acts_.data() + int64_t{a->index} * N_ * r, adapters_.data() + a->a,
                   adapters_.data() + a->b, N_, a->in, a->out, r, static_cast<T>(lora_->scale()));
  if (dropout_active_ && dinp != nullptr) {
    k::dropout_backward(dinp, lora_dx_, n, static_cast<float>(lora_->dropout), dropout_seed_of(*a));
  }
}

template <typename T>
void LlamaModel<T>::embed_and_check(const int32_t* inputs) {
  for (int i = 0; i < N_; ++i) {
    if (inputs[i] < 0 || inputs[i] >= config_.vocab_size) {
      throw Error(
          fmt::format("token id {} at row {} column {} is outside the model's vocabulary "
                      "of {}",
                      inputs[i], i / T_, i % T_, config_.vocab_size));
    }
  }
  k::embedding_forward(res_, inputs, params_.data() + layout_.embed(), N_, config_.dim);
}

template <typename T>
void LlamaModel<T>::run_layers() {
  refresh_bf16_weights();
  const int C = config_.dim, F = config_.mlp_dim, NH = config_.n_heads, hd = config_.head_dim();
  const int NKV = config_.kv_heads(), Q = config_.q_dim(), KV = config_.kv_dim(), W = Q + 2 * KV;
  const T* P = params_.data();
  const LayerActs a = layer_acts(config_, B_, T_);
  const LayerActs16 a16 = layer_acts16(config_, N_);
  for (int l = 0; l < config_.n_layers; ++l) {
    const LayerOffsets& w = layout_.layer(l);
    T* base = layer0_ + l * layer_stride_;
    T* x = res_ + int64_t{l} * N_ * C;
    T* out = res_ + int64_t{l + 1} * N_ * C;
    T* qkv = base + a.qkv;
    if (l == 0) {
      k::rmsnorm_forward(base + a.ln1, base + a.rstd1, x, P + w.input_norm, N_, C,
                         config_.norm_eps);
    } else {  // x = the layer below's MLP output, its residual added here
      add_then_norm(x, base + a.ln1, base + a.rstd1, base - layer_stride_ + a.res_mid,
                    P + w.input_norm, N_, C, config_.norm_eps);
    }
    linear_forward(qkv, base + a.ln1, act16(l, a16.ln1), w.qkv, N_, C, W);
    for (LoraTarget t : {LoraTarget::kQ, LoraTarget::kK, LoraTarget::kV}) {
      lora_forward(l, t, qkv, W, base + a.ln1);
    }
    // q's heads and then k's, side by side in each row: one pass rotates both.
    k::rope_forward(qkv, rope_cos_.data(), rope_sin_.data(), B_, T_, NH + NKV, hd, W);
    k::attention_forward(base + a.atty, base + a.att, att_ws_, qkv, qkv + Q, qkv + Q + KV, B_, T_,
                         NH, NKV, hd, W);
    // res_mid = x + o_proj(atty); out = res_mid + down(swiglu(gate_up(ln2))), the
    // second add fused into the norm above it (the next layer's or the final one)
    linear_forward(base + a.res_mid, base + a.atty, act16(l, a16.atty), w.o_proj, N_, Q, C);
    lora_forward(l, LoraTarget::kO, base + a.res_mid, C, base + a.atty);
    add_then_norm(base + a.res_mid, base + a.ln2, base + a.rstd2, x, P + w.post_norm, N_, C,
                  config_.norm_eps);
    linear_forward(base + a.gu, base + a.ln2, act16(l, a16.ln2), w.gate_up, N_, C, 2 * F);
    lora_forward(l, LoraTarget::kGate, base + a.gu, 2 * F, base + a.ln2);
    lora_forward(l, LoraTarget::kUp, base + a.gu, 2 * F, base + a.ln2);
    k::swiglu_forward(base + a.h, base + a.gu, N_, F);
    linear_forward(out, base + a.h, act16(l, a16.h), w.down, N_, F, C);
    lora_forward(l, LoraTarget::kDown, out, C, base + a.h);
  }
  T* last = res_ + int64_t{config_.n_layers} * N_ * C;
  add_then_norm(last, lnf_, rstdf_, layer0_ + (config_.n_layers - 1) * layer_stride_ + a.res_mid,
                P + layout_.final_norm(), N_, C, config_.norm_eps);
}

// A chunk of rows at a time: its logits [R, V] (a GEMM), the loss and, for
// training, the logits' gradient in their place (or rounded into dout16_ in
// bf16), whose two GEMMs are done at once: the final norm's output gradient
// into dln_ and the head's weight gradient into grads(). What is never held
// is the [N, V] logits: 392 MiB of seed's 571 MiB of activations at 4 x 511
// tokens, written, read and written again in memory each step.
template <typename T>
double LlamaModel<T>::head_and_loss(const int32_t* targets, double grad_scale, int64_t* predicted) {
  const int C = config_.dim, V = config_.vocab_size;
  const bool training = grad_scale != 0;
  const bool bf16 = precision_ == Precision::kBf16;
  T* dweight = training && !lora_ ? grads_.data() + layout_.lm_head() : nullptr;
  uint16_t* lnf16 = act16(config_.n_layers, 0);
  if (training) std::memset(dln_, 0, sizeof(T) * int64_t{N_} * C);
  double loss = 0;
  *predicted = 0;
  for (int r0 = 0; r0 < N_; r0 += head_rows_) {
    const int R = std::min(head_rows_, N_ - r0);
    const int64_t at = int64_t{r0} * C;
    uint16_t* in16 = lnf16 != nullptr ? lnf16 + at : nullptr;
    linear_forward(head_chunk_, lnf_ + at, in16, layout_.lm_head(), R, C, V);
    int64_t chunk_predicted = 0;
    loss += k::softmax_xent_forward(head_chunk_, targets + r0, R, V, grad_scale, &chunk_predicted,
                                    training && bf16 ? dout16_.data() : nullptr);
    *predicted += chunk_predicted;
    if (!training) continue;
    const auto backward_work = [&] {
      if (bf16) {
        linear_backward_rounded(dln_ + at, dweight, in16, layout_.lm_head(), R, C, V);
      } else {
        linear_backward(dln_ + at, dweight, head_chunk_, lnf_ + at, in16, layout_.lm_head(), R, C,
                        V);
      }
    };
    if (head_backward_) {
      head_backward_(backward_work);
    } else {
      backward_work();
    }
  }
  return loss;
}

template <typename T>
ForwardResult LlamaModel<T>::forward(const int32_t* inputs, const int32_t* targets,
                                     double grad_scale) {
  dropout_active_ = lora_ && lora_->dropout > 0 && targets != nullptr && grad_scale != 0;
  if (dropout_active_) ++dropout_forwards_;
  embed_and_check(inputs);
  run_layers();
  ForwardResult r;
  if (targets != nullptr) {
    for (int i = 0; i < N_; ++i) {
      if (targets[i] < -1 || targets[i] >= config_.vocab_size) {
        throw Error(
            fmt::format("target id {} at row {} column {} is outside the model's "
                        "vocabulary of {}",
                        targets[i], i / T_, i % T_, config_.vocab_size));
      }
    }
    r.loss_sum = head_and_loss(targets, grad_scale, &r.predicted);
  }
  return r;
}

template <typename T>
const T* LlamaModel<T>::forward_logits(const int32_t* inputs) {
  dropout_active_ = false;
  embed_and_check(inputs);
  run_layers();
  if (logits_.size() == 0) {
    logits_ = k::Buffer<T>(int64_t{N_} * config_.vocab_size, MemoryCategory::kActivations);
  }
  linear_forward(logits_.data(), lnf_, act16(config_.n_layers, 0), layout_.lm_head(), N_,
                 config_.dim, config_.vocab_size);
  return logits_.data();
}

template <typename T>
void LlamaModel<T>::zero_grad() {
  std::memset(grads_.data(), 0, grads_.size_bytes());
}

template <typename T>
void LlamaModel<T>::backward(const int32_t* inputs, const GradReadyHook& hook) {
  const int C = config_.dim;
  const int64_t NC = int64_t{N_} * C;
  const T* P = params_.data();
  const bool full = !lora_;  // else only the adapters have gradients
  T* G = grads_.data();
  TS_CHECK(omp_get_max_threads() <= threads_)
      << "thread count raised after the model sized its workspace";
  int64_t final_from = trainable_count();
  const std::function<void(int64_t)> ready = [&](int64_t begin) {
    if (hook && begin < final_from) hook(final_from = begin);
  };

  // The head's GEMMs ran in forward (head_and_loss): dln_ holds the final
  // norm's output gradient, grads() the head's. Tied, the head's gradient is
  // the embedding's, final only at the end.
  if (full && !config_.tie_embeddings) ready(layout_.lm_head());
  std::memset(dres_, 0, sizeof(T) * NC);
  const T* last = res_ + int64_t{config_.n_layers} * NC;
  k::rmsnorm_backward(dres_, full ? G + layout_.final_norm() : nullptr, dln_, last,
                      P + layout_.final_norm(), rstdf_, N_, C);
  if (full) ready(layout_.final_norm());
  const int first = full ? 0 : lora_first_layer(*lora_, config_);  // below it nothing trains
  for (int l = config_.n_layers - 1; l >= first; --l) layer_backward(l, ready);
  if (full) k::embedding_backward(G + layout_.embed(), dres_, inputs, N_, C);
  ready(0);
}

// dres_ holds d(out of layer l); leaves d(input of layer l) there (unless
// nothing below l trains).
template <typename T>
void LlamaModel<T>::layer_backward(int l, const std::function<void(int64_t)>& ready) {
  const int C = config_.dim, F = config_.mlp_dim, NH = config_.n_heads, hd = config_.head_dim();
  const int NKV = config_.kv_heads(), Q = config_.q_dim(), KV = config_.kv_dim(), W = Q + 2 * KV;
  const int64_t NC = int64_t{N_} * C;
  const T* P = params_.data();
  const bool full = !lora_;
  const bool below = full || l > lora_first_layer(*lora_, config_);  // input gradient needed
  auto gw = [&](int64_t offset) { return full ? grads_.data() + offset : nullptr; };
  auto zero = [](T* x, int64_t n) { std::memset(x, 0, sizeof(T) * n); };
  // After projection t's backward: in full training the tensor at `offset`
  // is final, with LoRA the adapters from (l, t) on.
  auto done = [&](int64_t offset, LoraTarget t) {
    ready(full ? offset : lora_layout_->begin_at(l, t));
  };
  const LayerOffsets& w = layout_.layer(l);
  const LayerActs a = layer_acts(config_, B_, T_);
  const LayerActs16 a16 = layer_acts16(config_, N_);
  T* base = layer0_ + l * layer_stride_;
  const T* x = res_ + int64_t{l} * NC;
  const T* qkv = base + a.qkv;
  // dres = d(out). MLP branch: out = res_mid + down(h).
  zero(dh_, int64_t{N_} * F);
  linear_backward(dh_, gw(w.down), dres_, base + a.h, act16(l, a16.h), w.down, N_, F, C);
  lora_backward(l, LoraTarget::kDown, dh_, dres_, C, base + a.h);
  done(w.down, LoraTarget::kDown);
  zero(dgu_, int64_t{N_} * 2 * F);
  k::swiglu_backward(dgu_, dh_, base + a.gu, N_, F);
  zero(dln_, NC);
  linear_backward(dln_, gw(w.gate_up), dgu_, base + a.ln2, act16(l, a16.ln2), w.gate_up, N_, C,
                  2 * F);
  lora_backward(l, LoraTarget::kGate, dln_, dgu_, 2 * F, base + a.ln2);
  lora_backward(l, LoraTarget::kUp, dln_, dgu_, 2 * F, base + a.ln2);
  done(w.gate_up, LoraTarget::kGate);
  k::rmsnorm_backward(dres_, gw(w.post_norm), dln_, base + a.res_mid, P + w.post_norm,
                      base + a.rstd2, N_, C);
  if (full) ready(w.post_norm);
  // dres = d(res_mid). Attention branch: res_mid = x + o_proj(atty).
  zero(datty_, int64_t{N_} * Q);
  linear_backward(datty_, gw(w.o_proj), dres_, base + a.atty, act16(l, a16.atty), w.o_proj, N_, Q,
                  C);
  lora_backward(l, LoraTarget::kO, datty_, dres_, C, base + a.atty);
  done(w.o_proj, LoraTarget::kO);
  zero(dqkv_, int64_t{N_} * W);
  k::attention_backward(dqkv_, dqkv_ + Q, dqkv_ + Q + KV, att_ws_, datty_, base + a.att, qkv,
                        qkv + Q, qkv + Q + KV, B_, T_, NH, NKV, hd, W);
  k::rope_backward(dqkv_, rope_cos_.data(), rope_sin_.data(), B_, T_, NH + NKV, hd, W);
  T* dln = below ? dln_ : nullptr;
  if (below) zero(dln_, NC);
  linear_backward(dln, gw(w.qkv), dqkv_, base + a.ln1, act16(l, a16.ln1), w.qkv, N_, C, W);
  for (LoraTarget t : {LoraTarget::kQ, LoraTarget::kK, LoraTarget::kV}) {
    lora_backward(l, t, dln, dqkv_, W, base + a.ln1);
  }
  done(w.qkv, LoraTarget::kQ);
  if (!below) return;
  k::rmsnorm_backward(dres_, gw(w.input_norm), dln_, x, P + w.input_norm, base + a.rstd1, N_, C);
  // dres = d(x) = d(res[l]).
  if (full) ready(w.begin);
}

template class LlamaModel<float>;
template class LlamaModel<double>;

}  // namespace trainscope::training
