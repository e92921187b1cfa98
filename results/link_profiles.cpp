#include "results/link_profiles.h"

#include <charconv>

#include <fmt/format.h>

namespace trainscope::results {

const LinkProfile* find_link_profile(std::string_view name) {
  for (const auto& p : kLinkProfiles) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::optional<double> parse_tc_rate(std::string_view rate) {
  double value = 0;
  const char* end = rate.data() + rate.size();
  auto [unit, ec] = std::from_chars(rate.data(), end, value, std::chars_format::fixed);
  if (ec != std::errc() || unit == rate.data() || !(value > 0)) return std::nullopt;
  struct Unit {
    std::string_view text;
    double bits;
  };
  static constexpr Unit kUnits[] = {{"bit", 1},     {"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9},
                                    {"tbit", 1e12}, {"bps", 8},    {"kbps", 8e3}, {"mbps", 8e6},
                                    {"gbps", 8e9},  {"tbps", 8e12}};
  const std::string_view u(unit, static_cast<size_t>(end - unit));
  for (const auto& k : kUnits) {
    if (k.text == u) return value * k.bits;
  }
  return std::nullopt;
}

std::optional<double> link_bits_per_second(std::string_view link) {
  if (const LinkProfile* p = find_link_profile(link)) return p->bits_per_second;
  return parse_tc_rate(link);
}

std::string link_profile_names() {
  std::string out;
  for (const auto& p : kLinkProfiles) {
    if (!out.empty()) out += ", ";
    out += p.name;
  }
  return out;
}

std::string link_problem(std::string_view link) {
  const std::optional<double> bits = link_bits_per_second(link);
  if (!bits) {
    return fmt::format(
        "unknown link '{}' (expected a profile: {}; or a rate in tc's syntax "
        "such as 500mbit)",
        link, link_profile_names());
  }
  if (!find_link_profile(link) &&
      !(*bits >= kMinLinkBitsPerSecond && *bits <= kMaxLinkBitsPerSecond)) {
    return fmt::format(
        "link '{}' is {:g} bit/s; the shaper of the virtual cluster takes 1mbit "
        "to 1tbit",
        link, *bits);
  }
  return "";
}

}  // namespace trainscope::results
