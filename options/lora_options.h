// The settings of LoRA fine-tuning (--lora-rank, --lora-alpha, ...): plain
// values. What they build, and the checks that need the model (a rank above
// a projection's size), are training/lora.h's.
//
// Thread-safety: plain values and pure functions.
#ifndef TRAINSCOPE_OPTIONS_LORA_OPTIONS_H_
#define TRAINSCOPE_OPTIONS_LORA_OPTIONS_H_

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "options/choices.h"

namespace trainscope::options {

struct LoraConfig {
  int rank = 8;
  double alpha = 16;   // scale = alpha / rank
  double dropout = 0;  // on the adapter's input, training forwards only
  int layers = 0;      // adapt the last N decoder blocks; 0: all
  std::vector<LoraTarget> targets = {LoraTarget::kQ, LoraTarget::kV};

  double scale() const { return alpha / rank; }
  bool operator==(const LoraConfig&) const = default;
};

// "q_proj" or "q" (any of q,k,v,o,gate,up,down); Error naming `what` and the
// choices otherwise.
LoraTarget parse_lora_target(std::string_view name, std::string_view what);
// A comma-separated list, as --lora-targets takes it; duplicates are errors.
std::vector<LoraTarget> parse_lora_targets(std::string_view list, std::string_view what);
// The inverse: "q_proj,v_proj".
std::string lora_targets_list(const std::vector<LoraTarget>& targets);

// The settings as trainscope records them (the summary's options.lora, a
// suite case's configuration): rank, alpha, dropout, layers, targets.
nlohmann::json lora_options_json(const LoraConfig& lora);

}  // namespace trainscope::options

#endif  // TRAINSCOPE_OPTIONS_LORA_OPTIONS_H_
