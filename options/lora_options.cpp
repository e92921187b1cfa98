#include "options/lora_options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "base/check.h"

namespace trainscope::options {

LoraTarget parse_lora_target(std::string_view name, std::string_view what) {
  for (std::size_t i = 0; i < kLoraTargets; ++i) {
    const auto t = static_cast<LoraTarget>(i);
    const std::string_view full = enum_name(t);
    if (name == full || (full.ends_with("_proj") && name == full.substr(0, full.size() - 5))) {
      return t;
    }
  }
  return parse_choice<LoraTarget>(name, what);
}

std::vector<LoraTarget> parse_lora_targets(std::string_view list, std::string_view what) {
  std::vector<LoraTarget> targets;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const LoraTarget t = parse_lora_target(list.substr(start, comma - start), what);
    if (std::find(targets.begin(), targets.end(), t) != targets.end()) {
      throw Error(fmt::format("{}: '{}' is listed twice", what, enum_name(t)));
    }
    targets.push_back(t);
    start = comma + 1;
  }
  std::sort(targets.begin(), targets.end());
  return targets;
}

std::string lora_targets_list(const std::vector<LoraTarget>& targets) {
  std::vector<std::string_view> names;
  for (LoraTarget t : targets) names.push_back(enum_name(t));
  return fmt::format("{}", fmt::join(names, ","));
}

nlohmann::json lora_options_json(const LoraConfig& l) {
  nlohmann::json targets = nlohmann::json::array();
  for (LoraTarget t : l.targets) targets.push_back(enum_name(t));
  return {{"rank", l.rank},
          {"alpha", l.alpha},
          {"dropout", l.dropout},
          {"layers", l.layers},
          {"targets", targets}};
}

}  // namespace trainscope::options
