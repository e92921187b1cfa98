#include "results/environment.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "base/check.h"

namespace trainscope::results {
namespace {

TEST(EnvironmentTest, CapturesHostFactsAndMcaSettings) {
  ::setenv("OMPI_MCA_btl_tcp_if_include", "lo", 1);
  nlohmann::json env = capture_environment("trainscope suite x.toml --db r.db");
  ::unsetenv("OMPI_MCA_btl_tcp_if_include");
  EXPECT_EQ(env.at("command_line"), "trainscope suite x.toml --db r.db");
  EXPECT_EQ(env.at("cores"), ::sysconf(_SC_NPROCESSORS_ONLN));
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  EXPECT_EQ(env.at("hostname"), host);
  EXPECT_EQ(env.at("mca").at("btl_tcp_if_include"), "lo");
  EXPECT_GT(env.at("memory_total_bytes").get<int64_t>(), 1 << 20);
  EXPECT_TRUE(env.at("cpu_model").is_string() || env.at("cpu_model").is_null());
  EXPECT_FALSE(env.at("openblas_config").get<std::string>().empty());
  EXPECT_GE(env.at("openblas_threads").get<int>(), 1);
  bool has_ompi = std::filesystem::exists("/usr/bin/ompi_info");
  EXPECT_EQ(env.at("openmpi_version").is_string(), has_ompi) << env.dump();

  nlohmann::json facts = host_facts(env);
  EXPECT_EQ(facts.at("cores"), env.at("cores"));
  EXPECT_FALSE(facts.contains("command_line"));
}

// The planted-slowdown test hook belongs to the environment: recorded there
// when set, and a value that is not a percentage names the variable.
TEST(EnvironmentTest, TheSlowdownHookIsRecordedAndCheckedNamingTheVariable) {
  ::unsetenv("TRAINSCOPE_SLOWDOWN");
  EXPECT_EQ(planted_slowdown_pct(), 0.0);
  EXPECT_FALSE(capture_environment("x").contains("test_hooks"));
  ::setenv("TRAINSCOPE_SLOWDOWN", "15", 1);
  EXPECT_EQ(planted_slowdown_pct(), 15.0);
  EXPECT_EQ(capture_environment("x").at("test_hooks").at("TRAINSCOPE_SLOWDOWN"), 15.0);
  for (const char* bad : {"abc", "-3", "15%", "2000"}) {
    ::setenv("TRAINSCOPE_SLOWDOWN", bad, 1);
    try {
      planted_slowdown_pct();
      ADD_FAILURE() << bad << ": expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("TRAINSCOPE_SLOWDOWN='") + bad + "'"),
                std::string::npos)
          << e.what();
    }
  }
  ::unsetenv("TRAINSCOPE_SLOWDOWN");
}

}  // namespace
}  // namespace trainscope::results
