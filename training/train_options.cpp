#include "training/train_options.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <system_error>

#include "kernels/check.h"

namespace trainscope::training {

using nlohmann::json;

std::string_view fine_tune_name(FineTune f) { return f == FineTune::kLora ? "lora" : "full"; }

FineTune parse_fine_tune(std::string_view name, std::string_view what) {
  if (name == "full") return FineTune::kFull;
  if (name == "lora") return FineTune::kLora;
  throw Error(fmt::format("{} must be full or lora, got '{}'", what, name));
}

json TrainOptions::to_json() const {
  return {
      {"model", model},
      {"batch", batch},
      {"block", block},
      {"steps", steps},
      {"lr", lr},
      {"schedule", lr_schedule_name(schedule)},
      {"lr_warmup", lr_warmup},
      {"min_lr", min_lr},
      {"weight_decay", weight_decay},
      {"beta1", beta1},
      {"beta2", beta2},
      {"adam_eps", adam_eps},
      {"grad_clip", grad_clip},
      {"seed", seed},
      {"precision", precision_name(precision)},
      {"warmup_steps", warmup_steps},
      {"tokenizer", tokenizer},
      {"eval_every", eval_every},
      {"val_batches", val_batches},
      {"mode", training::to_string(data.data_mode)},
      {"shard", training::to_string(data.shard)},
      {"reduce", comm::reduce_strategy_name(reduce)},
      {"bucket_mb", bucket_mb},
      {"allreduce", comm::allreduce_algorithm_name(allreduce)},
      {"comm_dtype", comm::comm_dtype_name(comm_dtype)},
      {"init_from", init_from},
      {"fine_tune", fine_tune_name(fine_tune)},
      {"lora", fine_tune == FineTune::kLora ? lora_options_json(lora) : json()},
      {"zero", zero},
      {"inject_delay",
       inject_delay ? json(fmt::format("{}:{}", inject_delay->rank, inject_delay->ms)) : json()},
      {"stall_timeout_s", stall_timeout_s},
      {"data",
       {{"source", data.source},
        {"split", data.split},
        {"text_field", data.text_field},
        {"delimiter", data.delimiter},
        {"one_per_line", data.one_per_line},
        {"skip_bad_records", data.skip_bad_records},
        {"max_record_bytes", data.max_record_bytes},
        {"batching", training::to_string(data.mode)},
        {"mask_padding", data.mask_padding},
        {"mask_prompt", data.mask_prompt},
        {"seed", data.seed},
        {"shuffle", data.shuffle}}},
  };
}

InjectedDelay parse_injected_delay(std::string_view text, std::string_view flag) {
  auto bad = [&](std::string_view what) {
    return Error(fmt::format("{}: {}, got '{}' (expected RANK:MS, e.g. 1:50)", flag, what, text));
  };
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) throw bad("no ':' between the rank and the milliseconds");
  InjectedDelay delay;
  const std::string_view rank = text.substr(0, colon), ms = text.substr(colon + 1);
  const auto r = std::from_chars(rank.data(), rank.data() + rank.size(), delay.rank);
  if (r.ec != std::errc() || r.ptr != rank.data() + rank.size() || delay.rank < 0) {
    throw bad("the rank must be a non-negative integer");
  }
  const auto m = std::from_chars(ms.data(), ms.data() + ms.size(), delay.ms);
  if (m.ec != std::errc() || m.ptr != ms.data() + ms.size() || !std::isfinite(delay.ms) ||
      delay.ms < 0) {
    throw bad("the milliseconds must be a non-negative number");
  }
  // An hour a step is already no benchmark; more overflows sleep_for.
  if (delay.ms > 3.6e6) throw bad("the milliseconds must be at most 3600000 (an hour)");
  return delay;
}

}  // namespace trainscope::training
