// Open MPI hostfiles: parsed as mpirun 4.1 reads them, written back the same.
#include "suites/suite_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "kernels/blas_core.h"
#include "base/check.h"
#include "suites/launch_plan.h"
#include "tests/suites/suite_parse.h"
#include "tests/temp_dir.h"
#include "training/model_config.h"

namespace trainscope::suites {
namespace {

TEST(Hostfile, ParsesSlotsAndComments) {
  const auto hosts =
      parse_hostfile("# cluster\nnode1 slots=4\n\nnode2   # two\nnode3 slots=2 max_slots=8\n", "h");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].host, "node1");
  EXPECT_EQ(hosts[0].slots, 4);
  EXPECT_EQ(hosts[1].slots, 1);
  EXPECT_EQ(hosts[2].slots, 2);
  EXPECT_EQ(hosts[2].max_slots, 8);
  EXPECT_EQ(hosts[0].max_slots, 0);
}

// What write_hostfile writes reads back as it was; a slot count given to it
// replaces every host's (one rank per host), max_slots with it.
TEST(Hostfile, WrittenHostsReadBackTheSame) {
  const testing::TempDir dir("hostfile");
  const auto hosts = parse_hostfile("alice@node1 slots=4 max_slots=8\nnode2\nnode3 slots=2\n", "h");
  write_hostfile(dir.path() / "all", hosts);
  const auto back = load_hostfile(dir.path() / "all");
  ASSERT_EQ(back.size(), 3u);
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    EXPECT_EQ(back[i].host, hosts[i].host);
    EXPECT_EQ(back[i].user, hosts[i].user);
    EXPECT_EQ(back[i].slots, hosts[i].slots);
    EXPECT_EQ(back[i].max_slots, hosts[i].max_slots);
  }
  write_hostfile(dir.path() / "one-each", hosts, 1);
  for (const auto& h : load_hostfile(dir.path() / "one-each")) {
    EXPECT_EQ(h.slots, 1) << h.host;
    EXPECT_EQ(h.max_slots, 0) << h.host;
  }
}

// What mpirun 4.1.4 accepts, as it reads it (checked with --display-allocation).
TEST(Hostfile, ReadsWhatOpenMpiReads) {
  const auto hosts = parse_hostfile(
      "a slots = 4\n"       // spaces around '='
      "b count=2 // two\n"  // a synonym, the other comment
      "c max-slots=6\n"     // max_slots alone: as many slots
      "d\nd\n"              // once per slot
      "e slots=2\ne\n"      // a count plus a bare line
      "f slots=0\n"         // left out
      "root@g cpu=3 max_slots=5\n",
      "hosts");
  ASSERT_EQ(hosts.size(), 6u);
  const std::vector<std::pair<std::string, int>> want = {{"a", 4}, {"b", 2}, {"c", 6},
                                                         {"d", 2}, {"e", 3}, {"g", 3}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(hosts[i].host, want[i].first) << i;
    EXPECT_EQ(hosts[i].slots, want[i].second) << hosts[i].host;
  }
  EXPECT_EQ(hosts[2].max_slots, 6);
  EXPECT_EQ(hosts[5].user, "root");
  EXPECT_EQ(hosts[5].max_slots, 5);
  EXPECT_EQ(hosts[0].user, "");
}

TEST(Hostfile, ErrorsNameFileAndLine) {
  auto msg = [](const std::string& text) -> std::string {
    try {
      parse_hostfile(text, "hosts.txt");
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), kExitBadInput);
      return e.what();
    }
    return "(no error)";
  };
  auto has = [](const std::string& message, const std::string& part) {
    return message.find(part) != std::string::npos;
  };
  const std::string bad_number = msg("a slots=2\nb slots=zero\n");
  EXPECT_TRUE(has(bad_number, "hosts.txt:2: slots must be a whole number")) << bad_number;
  EXPECT_TRUE(has(msg("a slots=-1\n"), "hosts.txt:1: slots must be")) << msg("a slots=-1\n");
  EXPECT_TRUE(has(msg("a max_slots=1x\n"), "hosts.txt:1: max_slots must be"));
  const std::string unknown = msg("a\nb cpus=2\n");
  EXPECT_TRUE(has(unknown, "hosts.txt:2: unexpected 'cpus=2'")) << unknown;
  const std::string below = msg("a\n\nb slots=3 max_slots=2\n");
  EXPECT_TRUE(has(below, "hosts.txt:3: host 'b': max_slots=2 is below its 3 slots")) << below;
  const std::string twice = msg("a slots=2\nb\na slots=3\n");
  EXPECT_TRUE(has(twice, "hosts.txt:3: host 'a' has its slot count on line 1 already")) << twice;
  EXPECT_TRUE(has(msg("slots=2 a\n"), "hosts.txt:1: 'slots=2': a line starts with the host name"));
  EXPECT_TRUE(has(msg("a\n/* old */ b\n"), "hosts.txt:2: /* */ comments are not supported"));
  EXPECT_TRUE(has(msg("@a\n"), "hosts.txt:1: '@a' is not [user@]host"));
  EXPECT_TRUE(has(msg("# nothing\n\n"), "hosts.txt: hostfile lists no hosts"));
  EXPECT_TRUE(has(msg("a slots=0\n"), "no hosts with slots"));
  EXPECT_THROW(load_hostfile("/nonexistent/hostfile"), Error);
}

}  // namespace
}  // namespace trainscope::suites
