#include "results/link_profiles.h"

#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include <gtest/gtest.h>

namespace trainscope::results {
namespace {

TEST(LinkProfiles, RatesInTcSyntaxAreBitsOrBytesPerSecond) {
  EXPECT_DOUBLE_EQ(*parse_tc_rate("500mbit"), 5e8);
  EXPECT_DOUBLE_EQ(*parse_tc_rate("1gbps"), 8e9);
  EXPECT_DOUBLE_EQ(*parse_tc_rate("2.5gbit"), 2.5e9);
  EXPECT_DOUBLE_EQ(*parse_tc_rate("100bit"), 100);
  for (const char* bad : {"", "fast", "mbit", "0mbit", "-1gbit", "10 gbit", "10gbits", "1e9bit"}) {
    EXPECT_FALSE(parse_tc_rate(bad)) << bad;
  }
  EXPECT_DOUBLE_EQ(*link_bits_per_second("gige"), 1e9);
  EXPECT_DOUBLE_EQ(*link_bits_per_second("tb-bridge"), 20e9);
  EXPECT_DOUBLE_EQ(*link_bits_per_second("unlimited"), 0);
  EXPECT_DOUBLE_EQ(*link_bits_per_second("300mbit"), 3e8);
  EXPECT_FALSE(link_bits_per_second("infiniband"));
  EXPECT_EQ(link_profile_names(), "gige, 2.5gbe, 10gbe, tb-bridge, unlimited");
}

// The shaper's table (scripts/netns-cluster.sh, `PROFILE) echo RATE ;;`) and
// ours name the same profiles with the same rates.
TEST(LinkProfiles, TheClusterScriptShapesEveryProfileAtItsRate) {
  std::ifstream in(std::string(TRAINSCOPE_SOURCE_DIR) + "/scripts/netns-cluster.sh");
  ASSERT_TRUE(in) << "scripts/netns-cluster.sh not found";
  std::stringstream text;
  text << in.rdbuf();
  for (const auto& p : kLinkProfiles) {
    if (p.tc_rate.empty()) continue;
    const std::string line = std::string(p.name) + ") echo " + std::string(p.tc_rate);
    EXPECT_NE(text.str().find(line), std::string::npos) << "no '" << line << "' in the script";
    EXPECT_DOUBLE_EQ(*parse_tc_rate(p.tc_rate), p.bits_per_second) << p.name;
  }
  // And the script knows no profile we do not: every `NAME) echo RATE` line.
  const std::string script = text.str();
  const std::regex profile_line(R"(\n\s+([a-z0-9.-]+)\) echo )");
  int lines = 0;
  for (std::sregex_iterator it(script.begin(), script.end(), profile_line), end; it != end;
       ++it, ++lines) {
    EXPECT_NE(find_link_profile((*it)[1].str()), nullptr) << (*it)[1].str();
  }
  EXPECT_EQ(lines, static_cast<int>(kLinkProfiles.size()));
  // The range of rates it takes is the one suites are checked against.
  EXPECT_NE(script.find(fmt::format("rate_bps >= {:.0f}", kMinLinkBitsPerSecond)),
            std::string::npos);
  EXPECT_NE(script.find(fmt::format("rate_bps <= {:.0f}", kMaxLinkBitsPerSecond)),
            std::string::npos);
}

}  // namespace
}  // namespace trainscope::results
