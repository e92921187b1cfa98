// LlamaModel: a decoder-only Llama (token embedding, N blocks of
// [RMSNorm -> causal MHA with RoPE -> residual -> RMSNorm -> SwiGLU MLP ->
// residual], final RMSNorm, output projection: its own or, with
// tie_word_embeddings, the embedding's rows) with explicit forward and
// backward over the kernels in kernels/. Attention may be grouped-query.
//
// All memory is allocated once, in the constructor, for a fixed number of
// rows B and sequence length T: parameters and gradients in one arena each
// (see ParamLayout), forward activations in one arena (category activations),
// backward scratch in another (category workspace). A training step allocates
// nothing.
//
// With a LoraConfig the base weights are frozen and LoRA adapters
// (training/lora.h) train instead: the gradient arena then holds the
// adapters' gradients only, backward skips every frozen weight's gradient
// (input gradients only) and stops at the first adapted layer, and
// trainable() is the adapter arena.
//
// With Precision::kBf16 (float only) the linear layers multiply bf16 copies
// (training/precision.h): the GEMM weights' copy (category parameters) is
// remade by the first forward after params() was handed out mutably, so once
// per optimizer step; each GEMM input's copy is saved for backward
// (activations) and the output gradients are rounded into one scratch
// (workspace).
//
// T is float for training; double exists so the whole model's gradient can be
// checked against finite differences.
//
// Not thread-safe: one model per thread of control. Kernels inside use the
// OpenMP thread count in effect.
#ifndef TRAINSCOPE_TRAINING_LLAMA_MODEL_H_
#define TRAINSCOPE_TRAINING_LLAMA_MODEL_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "kernels/storage.h"
#include "training/lora.h"
#include "training/model_config.h"
#include "training/param_layout.h"
#include "training/precision.h"

namespace trainscope::training {

// Called during backward each time the gradients in [begin, total) of the
// gradient arena have become final: after every tensor's gradient is
// complete, in reverse arena order (head, final norm, each layer's down ...
// input norm from the last layer to the first, then the embedding; with LoRA
// the adapters of each projection in that order), so begin strictly
// decreases and ends at 0. Used to launch gradient reductions early and to
// drive the progress of those in flight.
using GradReadyHook = std::function<void(int64_t begin)>;

// Runs `backward_work`, the head's gradient GEMMs of a chunk, which the fused
// head does in forward (the logits are never held): a trainer books them to
// its backward phase (training/run/step.cpp). Null: they just run.
using HeadBackwardScope = std::function<void(const std::function<void()>& backward_work)>;

struct ForwardResult {
  double loss_sum = 0;    // sum of per-token losses over predicted positions
  int64_t predicted = 0;  // number of predicted positions (targets != -1)
};

template <typename T>
class LlamaModel {
 public:
  // rows = sequences per step (B), seq_len = tokens per sequence (T).
  // Throws trainscope::Error if seq_len exceeds config.max_seq_len.
  // grad_storage: trainable_count() elements the gradients live in (a shared
  // window, for the shared-memory all-reduce; the caller counts them in the
  // tracker); empty: the model allocates its own (category gradients).
  // lora: fine-tune adapters over frozen weights (validated: Error names the flag).
  // precision: kBf16 only for T = float.
  LlamaModel(const ModelConfig& config, int rows, int seq_len, std::span<T> grad_storage = {},
             const std::optional<LoraConfig>& lora = std::nullopt,
             Precision precision = Precision::kFp32);

  // The elements that train: the whole layout, or the LoRA arena.
  static int64_t trainable_count(const ModelConfig& config, const std::optional<LoraConfig>& lora);

  const ModelConfig& config() const { return config_; }
  const ParamLayout& layout() const { return layout_; }
  int rows() const { return B_; }
  int seq_len() const { return T_; }

  Precision precision() const { return precision_; }
  // Mutable: the caller may change the weights, so their bf16 copy is remade.
  std::span<T> params() {
    weights_changed_ = true;
    return params_.span();
  }
  std::span<const T> params() const { return params_.span(); }
  std::span<T> grads() { return grads_; }
  // What the optimizer updates: params(), or adapters() under LoRA.
  std::span<T> trainable() { return lora_ ? adapters() : params(); }
  int64_t trainable_count() const { return static_cast<int64_t>(grads_.size()); }

  // LoRA only (null / empty otherwise).
  const LoraLayout* lora_layout() const { return lora_layout_ ? &*lora_layout_ : nullptr; }
  const std::optional<LoraConfig>& lora() const { return lora_; }
  std::span<T> adapters() { return adapters_.span(); }
  std::span<const T> adapters() const { return adapters_.span(); }
  // mlx-lm's initialisation: A uniform in +-1/sqrt(in), B zero (so a fresh
  // adapter leaves the model's output exactly as it was).
  void init_adapters(uint64_t seed);
  // LoRA dropout masks are drawn from this stream (ranks pass their own);
  // each training forward takes the next ones.
  // Restarts the stream: a forward after the same seed draws the same masks.
  void set_dropout_seed(uint64_t seed) {
    dropout_seed_ = seed;
    dropout_forwards_ = 0;
  }

  // How many times the bf16 weight copy was made (0 in fp32).
  int64_t bf16_weight_copies() const { return bf16_weight_copies_; }

  // Hugging Face Llama initialisation: normal(0, 0.02) for matrices and the
  // embedding, ones for norm weights. Deterministic in `seed`.
  void init_weights(uint64_t seed);

  // Runs the model on inputs [B, T]. With targets [B, T] (-1 = not predicted)
  // returns the summed loss. The LM head and the loss run fused, a chunk of
  // rows at a time (head_and_loss): the [B, T, V] logits are never held.
  // When grad_scale != 0 the chunk's loss gradient is consumed at once: the
  // head's weight gradient ACCUMULATES into grads() here, in forward (so
  // zero_grad() comes before forward()), and the final norm's output
  // gradient is kept for backward(). Token ids must be in [0, vocab)
  // (checked: Error names the row and column).
  ForwardResult forward(const int32_t* inputs, const int32_t* targets, double grad_scale);
  // Logits only ([B, T, V], valid until the next forward), for inference and
  // tests; the first call allocates them (category activations).
  const T* forward_logits(const int32_t* inputs);

  // Accumulates into grads() the rest of the gradient of grad_scale *
  // loss_sum of the last forward(). `hook` (optional) hears about gradients
  // as they become final.
  void backward(const int32_t* inputs, const GradReadyHook& hook = nullptr);
  // Before a training forward (see forward()).
  void zero_grad();

  // Rows of the LM head's chunk: kHeadChunkBytes of logits at a time, but at
  // least kHeadChunkMinRows. Each chunk streams the head's weight twice and
  // its gradient in and out whatever its rows, a cost of about 18 / rows of
  // the head's time on these CPUs (GEMMs at 100 GFLOP/s, memory at 15 GB/s)
  // whatever the vocabulary: at 166 rows (32 MiB of GPT-2's vocabulary) the
  // seed step ran 4-7% slower than at 666 (docs/RESULTS.md, issue 35).
  static int head_chunk_rows(const ModelConfig& c, int rows);
  // Fewer rows a chunk than head_chunk_rows() (tests: several chunks on a
  // small model); clamped to [1, that].
  void set_head_chunk_rows(int rows) { head_rows_ = std::clamp(rows, 1, head_rows_max_); }
  static constexpr int64_t kHeadChunkBytes = int64_t{32} << 20;
  static constexpr int64_t kHeadChunkMinRows = 512;
  // What each chunk's head gradient GEMMs run inside (HeadBackwardScope).
  void set_head_backward_scope(HeadBackwardScope scope) { head_backward_ = std::move(scope); }

  // Activation floats per the model's own formula, for memory accounting:
  // forward-saved tensors (category activations) and backward scratch
  // (category workspace).
  static int64_t activation_elements(const ModelConfig& c, int rows, int seq_len);
  static int64_t workspace_elements(const ModelConfig& c, int rows, int seq_len, int threads);
  // Model FLOPs of one training step (forward + backward) over rows x seq_len
  // tokens: 6 x (non-embedding parameters) per token plus attention
  // 12 x layers x T x C per token (the PaLM accounting, full attention).
  // With LoRA: frozen matrices cost forward + input gradient (4x), layers
  // below the first adapted one forward only (2x), plus the adapters' 6x.
  static double train_flops(const ModelConfig& c, int rows, int seq_len,
                            const std::optional<LoraConfig>& lora = std::nullopt);

 private:
  // Error (bad input) before anything is allocated when the weights, the
  // gradients (if the model owns them) and the activations of `rows` x
  // `seq_len` exceed the machine's memory (training/model_size.h).
  void check_memory(int rows, int seq_len, bool own_gradients) const;
  void embed_and_check(const int32_t* inputs);
  void run_layers();
  // The head and the loss over rows in chunks of head_rows_ (see forward()).
  double head_and_loss(const int32_t* targets, double grad_scale, int64_t* predicted);
  void layer_backward(int l, const std::function<void(int64_t)>& ready);
  // out (row stride ldo) += layer l's adapter t applied to inp [N, in], if any.
  void lora_forward(int l, LoraTarget t, T* out, int ldo, const T* inp);
  // Its gradients from dout (row stride ldo); adds its input gradient into dinp.
  void lora_backward(int l, LoraTarget t, T* dinp, const T* dout, int ldo, const T* inp);
  uint64_t dropout_seed_of(const LoraAdapter& a) const;
  // out[N, OC] = inp[N, C] @ W^T for the weight at `offset` of the arena; in
  // bf16 inp is rounded into inp16 (kept for linear_backward).
  void linear_forward(T* out, const T* inp, uint16_t* inp16, int64_t offset, int N, int C, int OC);
  // matmul_backward for that weight (dinp / dweight may be null).
  void linear_backward(T* dinp, T* dweight, const T* dout, const T* inp, const uint16_t* inp16,
                       int64_t offset, int N, int C, int OC);
  // bf16: the same from the output gradient already rounded into dout16_.
  void linear_backward_rounded(T* dinp, T* dweight, const uint16_t* inp16, int64_t offset, int N,
                               int C, int OC);
  void allocate_bf16();
  // bf16 only (else null): layer l's copy at `at` (layer_acts16); l = layers: the final norm's.
  uint16_t* act16(int l, int64_t at);
  void refresh_bf16_weights();

  ModelConfig config_;
  ParamLayout layout_;
  int B_, T_, N_;  // N = B * T rows
  int threads_;    // OpenMP threads the workspace was sized for
  kernels::Buffer<T> params_, owned_grads_;
  std::span<T> grads_;          // owned_grads_ or the caller's storage
  kernels::Buffer<T> acts_;     // forward-saved activations
  kernels::Buffer<T> scratch_;  // backward scratch
  kernels::Buffer<T> rope_cos_, rope_sin_;
  // LoRA: the adapters (category parameters), each adapter's saved x A^T
  // [N, r] (activations), du [N, r] and dropout's [N, in] input and its
  // gradient (workspace).
  std::optional<LoraConfig> lora_;
  std::optional<LoraLayout> lora_layout_;
  kernels::Buffer<T> adapters_, lora_acts_, lora_scratch_;
  T *lora_du_ = nullptr, *lora_x_ = nullptr, *lora_dx_ = nullptr;
  uint64_t dropout_seed_ = 0, dropout_forwards_ = 0;
  bool dropout_active_ = false;  // the last forward dropped adapter inputs
  // bf16: the GEMM weights' copy (offset in weights16_ per arena offset), the
  // GEMM inputs' copies per layer (and the final norm's), and the rounded
  // output gradient of the GEMM in backward.
  Precision precision_ = Precision::kFp32;
  struct Bf16Weight {
    int64_t offset, offset16, numel;
  };
  std::vector<Bf16Weight> bf16_weights_;
  kernels::Buffer<uint16_t> weights16_, acts16_, dout16_;
  bool weights_changed_ = true;
  int64_t bf16_weight_copies_ = 0;
  // Views into acts_ (per layer: stride layer_stride_).
  int64_t layer_stride_ = 0;
  T* res_ = nullptr;  // (L + 1) x [N, C] residual stream
  T* layer0_ = nullptr;
  T *lnf_ = nullptr, *rstdf_ = nullptr;
  kernels::Buffer<T> logits_;  // forward_logits() only
  // Views into scratch_. dln_ holds the final norm's output gradient from a
  // training forward to backward; head_chunk_ one chunk of logits, then its
  // gradient.
  T *dres_ = nullptr, *dln_ = nullptr, *datty_ = nullptr, *dqkv_ = nullptr, *dgu_ = nullptr,
    *dh_ = nullptr, *att_ws_ = nullptr, *head_chunk_ = nullptr;
  int head_rows_ = 0, head_rows_max_ = 0;
  HeadBackwardScope head_backward_;
};

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_LLAMA_MODEL_H_
