// The named links a virtual cluster can put between its hosts, declared once
// for the suite parser, the runner and the report's predictions.
// scripts/netns-cluster.sh has the same table for the shaper (tc tbf); a test
// (tests/results/link_profiles_test.cpp) keeps the two in step.
//
// A link is a profile name or a rate in tc's syntax: a number and a unit,
// bit kbit mbit gbit tbit (bits per second, SI) or bps kbps mbps gbps tbps
// (bytes per second).
//
// Thread-safety: constants and pure functions.
#ifndef TRAINSCOPE_RESULTS_LINK_PROFILES_H_
#define TRAINSCOPE_RESULTS_LINK_PROFILES_H_

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace trainscope::results {

struct LinkProfile {
  std::string_view name;
  std::string_view tc_rate;  // "" for unlimited
  double bits_per_second;    // 0 for unlimited
  std::string_view what;
};

inline constexpr std::array<LinkProfile, 5> kLinkProfiles = {{
    {"gige", "1gbit", 1e9, "Gigabit Ethernet"},
    {"2.5gbe", "2500mbit", 2.5e9, "2.5 Gigabit Ethernet"},
    {"10gbe", "10gbit", 10e9, "10 Gigabit Ethernet"},
    {"tb-bridge", "20gbit", 20e9, "a Thunderbolt IP bridge between two Macs"},
    {"unlimited", "", 0, "no shaping: what the machine's veth pairs carry"},
}};

// The rates the virtual cluster's shaper takes (scripts/netns-cluster.sh
// refuses others): slower starves MPI's own messages, faster is no limit.
inline constexpr double kMinLinkBitsPerSecond = 1e6;   // 1mbit
inline constexpr double kMaxLinkBitsPerSecond = 1e12;  // 1tbit

const LinkProfile* find_link_profile(std::string_view name);

// Bits per second of a tc rate ("500mbit", "1gbps"); std::nullopt when the
// text is not one.
std::optional<double> parse_tc_rate(std::string_view rate);

// The nominal bits per second of a link (profile or rate): 0 for unlimited,
// std::nullopt when it is neither a profile nor a rate.
std::optional<double> link_bits_per_second(std::string_view link);

// "gige, 2.5gbe, 10gbe, tb-bridge, unlimited", for messages.
std::string link_profile_names();

// Why `link` is not a link the virtual cluster takes (a profile, or a tc
// rate from kMinLinkBitsPerSecond to kMaxLinkBitsPerSecond); "" when it is.
std::string link_problem(std::string_view link);

}  // namespace trainscope::results

#endif  // TRAINSCOPE_RESULTS_LINK_PROFILES_H_
