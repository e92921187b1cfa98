#include "options/train_options.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <system_error>

#include "base/check.h"

namespace trainscope::options {

using nlohmann::json;

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

}  // namespace trainscope::options
