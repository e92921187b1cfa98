// `trainscope generate`: text from a model, one token at a time through a
// key/value cache (training/kv_decoder.h), streamed as it comes, ended by
// mlx-lm's summary: prompt and generation tokens and their rates, and peak
// memory (tracked and VmHWM).
//
//   trainscope generate --model ckpt/step-00000400 --prompt "Once upon a time"
//   trainscope generate --model DIR --chat --prompt "Tell this like a pirate: ..." --temp 0.7
//   trainscope generate --model BASE --adapters lora-ckpt --chat --prompt "..."
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/validators.h"
#include "base/check.h"
#include "kernels/storage.h"
#include "profiler/memory_tracker.h"
#include "training/adapters.h"
#include "training/data/records.h"
#include "training/hf_checkpoint.h"
#include "training/kv_decoder.h"
#include "training/tokenizers/make_tokenizer.h"

namespace trainscope::cli {
namespace {

struct GenerateFlags {
  std::string model;
  std::string adapters;
  std::string prompt;
  bool chat = false;
  int max_tokens = 0;  // 0: kDefaultMaxTokens, or the positions the prompt leaves
  double temp = 0.0;
  double top_p = 1.0;
  uint64_t seed = 0;
  std::string tokenizer = "byte";
};

constexpr int kDefaultMaxTokens = 100;

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// The prompt as the model saw chats in training: a user turn, then the
// assistant's header for it to continue.
std::string prompt_text(const GenerateFlags& f) {
  if (!f.chat) return f.prompt;
  std::string text;
  const std::vector<training::ChatMessage> turn = {{"user", f.prompt}};
  training::render_chat(turn, &text);
  return text + training::chat_header("assistant");
}

// Error (the work failed) unless the logits after step `step` (1-based: the
// step-th token fed) are finite: sampling from them would print garbage.
void check_logits(std::span<const float> logits, int step, std::size_t prompt_tokens,
                  const training::ParamLayout& layout, std::span<const float> params) {
  if (std::all_of(logits.begin(), logits.end(), [](float v) { return std::isfinite(v); })) return;
  const bool nan = std::any_of(logits.begin(), logits.end(), [](float v) { return std::isnan(v); });
  const std::string token =
      static_cast<std::size_t>(step) <= prompt_tokens
          ? fmt::format("prompt token {} of {}", step, prompt_tokens)
          : fmt::format("generated token {}", static_cast<std::size_t>(step) - prompt_tokens);
  const std::string weight = training::first_non_finite_tensor(layout, params);
  throw Error(
      fmt::format("non-finite logits ({}) at step {} ({}): {}", nan ? "NaN" : "inf", step, token,
                  weight.empty() ? "every weight is finite, the activations overflowed"
                                 : "first non-finite weight: " + weight),
      kExitFailure);
}

void run(GenerateFlags f) {
  const training::ModelConfig config = training::read_hf_config(f.model);
  const training::ParamLayout layout(config);
  kernels::Buffer<float> params(layout.total(), kernels::MemoryCategory::kParameters);
  training::load_hf_weights(f.model, layout, params.span());
  // Merged into the weights once: decoding then costs what the base costs.
  if (!f.adapters.empty()) training::fuse_adapters_from(f.adapters, config, layout, params.span());
  const auto tokenizer = training::make_tokenizer(f.tokenizer);
  if (tokenizer->vocab_size() > config.vocab_size) {
    throw Error(fmt::format("tokenizer {} has {} ids, more than the model's vocabulary of {}",
                            f.tokenizer, tokenizer->vocab_size(), config.vocab_size));
  }
  const std::vector<int32_t> prompt = tokenizer->encode(prompt_text(f));
  if (prompt.empty()) throw Error("--prompt is empty: there is nothing to continue");
  // Not given: as mlx-lm, stop where the context ends.
  if (f.max_tokens == 0) {
    f.max_tokens = static_cast<int>(std::clamp<int64_t>(
        config.max_seq_len - static_cast<int64_t>(prompt.size()), 1, kDefaultMaxTokens));
  }
  const auto need = static_cast<int64_t>(prompt.size()) + f.max_tokens;
  if (need > config.max_seq_len) {
    throw Error(
        fmt::format("the prompt's {} tokens and --max-tokens {} need {} positions; the "
                    "model has {}",
                    prompt.size(), f.max_tokens, need, config.max_seq_len));
  }
  // Only the ids the tokenizer has: a model's vocabulary may be padded
  // beyond it (seed's 50257 rows with the 257-id byte tokenizer), and rows
  // nobody samples need not be read every token.
  training::KvDecoder decoder(config, params.span(), static_cast<int>(need),
                              tokenizer->vocab_size());
  std::mt19937_64 rng(f.seed);

  const auto start = std::chrono::steady_clock::now();
  const float* logits = nullptr;
  int steps = 0;
  auto feed = [&](int32_t id) {
    logits = decoder.step(id);
    check_logits({logits, static_cast<std::size_t>(decoder.logit_rows())}, ++steps, prompt.size(),
                 layout, params.span());
  };
  for (int32_t id : prompt) feed(id);
  const double prompt_s = seconds(start);
  const auto gen_start = std::chrono::steady_clock::now();
  int generated = 0;
  while (generated < f.max_tokens) {
    const int32_t next =
        training::sample_token({logits, static_cast<std::size_t>(decoder.logit_rows())},
                               static_cast<float>(f.temp), static_cast<float>(f.top_p), rng);
    if (next == tokenizer->eot_id()) break;
    ++generated;
    const std::string piece = tokenizer->decode(std::vector<int32_t>{next});
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    if (generated < f.max_tokens) feed(next);
  }
  const double gen_s = seconds(gen_start);
  const profiler::ProcessMemory process = profiler::self_process_memory(false);
  std::printf("\n==========\n");
  std::printf("Prompt: %zu tokens, %.3f tokens-per-sec\n", prompt.size(),
              prompt_s > 0 ? static_cast<double>(prompt.size()) / prompt_s : 0.0);
  std::printf("Generation: %d tokens, %.3f tokens-per-sec\n", generated,
              gen_s > 0 ? generated / gen_s : 0.0);
  std::printf("Peak memory: %s tracked, %s VmHWM\n",
              kernels::format_bytes(static_cast<double>(profiler::peak_memory())).c_str(),
              kernels::format_bytes(static_cast<double>(process.hwm_bytes)).c_str());
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto f = std::make_shared<GenerateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "generate",
      "Generate text from a model with a key/value cache, streaming it; end with the prompt's "
      "and the generation's tokens and tokens/s and the peak memory (as mlx-lm's generate).");
  cmd->add_option("--model", f->model,
                  "A Hugging Face Llama checkpoint directory (config.json + model.safetensors or "
                  "a sharded index; F32/F16/BF16), e.g. a step directory of a training run")
      ->required();
  cmd->add_option("--adapters", f->adapters,
                  "LoRA adapters for --model: a PEFT adapter folder (adapter_model.safetensors + "
                  "adapter_config.json) or the checkpoint directory of a --fine-tune lora run "
                  "(its latest step)");
  cmd->add_option("--prompt", f->prompt, "The text to continue")->required();
  cmd->add_flag("--chat", f->chat,
                "Render the prompt as a user turn of the chat template and let the model answer "
                "as the assistant");
  cmd->add_option("--max-tokens", f->max_tokens,
                  fmt::format("Most tokens to generate (fewer at end-of-text); default {}, or "
                              "the positions the prompt leaves in the model's context",
                              kDefaultMaxTokens))
      ->check(whole_number<int>(1));
  cmd->add_option("--temp", f->temp, "Sampling temperature; 0 is greedy (deterministic)")
      ->capture_default_str()
      ->check(kNonNegative)
      ->check(kFinite);
  cmd->add_option("--top-p", f->top_p,
                  "Nucleus sampling: draw from the most likely tokens "
                  "whose probability reaches this (1 keeps all)")
      ->capture_default_str()
      ->check(number_that("in (0, 1]", "(0,1]", [](double p) { return p > 0 && p <= 1; }));
  cmd->add_option("--seed", f->seed, "Seed of the sampler")
      ->capture_default_str()
      ->check(whole_number<uint64_t>());
  cmd->add_option("--tokenizer", f->tokenizer,
                  "Tokenizer the model was trained with: byte, or gpt2:DIR")
      ->capture_default_str();
  cmd->callback([f] { run(*f); });
}

}  // namespace trainscope::cli
