// suites/cluster_check.h: the probe's report and its reading back, the
// verdict on each host, and the two tables of `trainscope cluster check`.
#include "suites/cluster_check.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainscope::suites {
namespace {

HostReport report(int rank, const std::string& hostname) {
  HostReport r;
  r.rank = rank;
  r.hostname = hostname;
  r.version = "0.1.0";
  r.revision = "abc123";
  r.interface = "eth0";
  r.interface_found = true;
  r.address = "10.0.0." + std::to_string(rank + 1);
  return r;
}

std::string line_of(const HostReport& r) {
  nlohmann::json j;
  results::to_json(j, r);
  return j.dump() + "\n";
}

TEST(ClusterCheckTest, ThisHostReportsLoopback) {
  const HostReport r = probe_this_host(3, "lo", "1.2.3", "rev");
  EXPECT_EQ(r.rank, 3);
  EXPECT_FALSE(r.hostname.empty());
  EXPECT_TRUE(r.interface_found);
  EXPECT_EQ(r.address, "127.0.0.1");
  EXPECT_EQ(r.version, "1.2.3");
  const HostReport none = probe_this_host(0, "no-such-if0", "1.2.3", "rev");
  EXPECT_FALSE(none.interface_found);
  EXPECT_EQ(none.address, "");
}

TEST(ClusterCheckTest, ReportsAreReadFromAmongMpirunsOwnLines) {
  const std::string out = "Warning: something from mpirun\n" + line_of(report(1, "b")) +
                          "{\"not\": \"a report\"}\n" + line_of(report(0, "a")) + "{broken\n";
  const auto reports = parse_host_reports(out);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports.at(0).hostname, "a");
  EXPECT_EQ(reports.at(1).address, "10.0.0.2");
  EXPECT_TRUE(parse_host_reports("no reports\n").empty());

  results::AllReduceRow row;
  row.size_bytes = 4096;
  row.busbw_gbps = 0.125;
  nlohmann::json j;
  results::to_json(j, row);
  const auto parsed = parse_pair_row("[ts-h0] noise\n" + j.dump() + "\n");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->size_bytes, 4096);
  EXPECT_DOUBLE_EQ(parsed->busbw_gbps, 0.125);
  EXPECT_FALSE(parse_pair_row(line_of(report(0, "a"))).has_value());
}

TEST(ClusterCheckTest, EachWayAHostCanFailIsNamed) {
  std::vector<HostCheck> hosts;
  auto add = [&](const std::string& host, HostReport r) {
    hosts.push_back({host, r, false, ""});
    return &hosts.back().report.value();
  };
  add("good", report(0, "good"));
  add("old", report(1, "old"))->version = "0.0.9";
  add("dirty", report(2, "dirty"))->revision = "def456";
  add("noif", report(3, "noif"))->interface_found = false;
  add("noaddr", report(4, "noaddr"))->address = "";
  add("again", report(5, "good"));  // the machine of "good" under another name
  hosts.push_back({"gone", std::nullopt, false, "not reached: exit code 255: ssh: no route"});
  judge_hosts(hosts, "0.1.0", "abc123");

  EXPECT_EQ(hosts[0].problem, "");
  EXPECT_EQ(hosts[1].problem, "version 0.0.9 (here 0.1.0)");
  EXPECT_EQ(hosts[2].problem, "revision def456 (here abc123)");
  EXPECT_EQ(hosts[3].problem, "no interface eth0");
  EXPECT_EQ(hosts[4].problem, "eth0 has no IPv4 address");
  EXPECT_EQ(hosts[5].problem, "the same machine as good (both are good)");
  EXPECT_EQ(hosts[6].problem, "not reached: exit code 255: ssh: no route");

  const std::string table = format_host_table(hosts);
  EXPECT_NE(
      table.find("#    host hostname  version     revision interface         address  status\n"),
      std::string::npos)
      << table;
  EXPECT_NE(table.find("     good     good    0.1.0       abc123      eth0        10.0.0.1  ok\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("FAILED: version 0.0.9 (here 0.1.0)"), std::string::npos);
  EXPECT_NE(table.find("missing"), std::string::npos);
  EXPECT_NE(
      table.find("     gone        -        -            -         -               -  FAILED: "
                 "not reached"),
      std::string::npos)
      << table;
}

TEST(ClusterCheckTest, PairTableHasNcclTestsColumnsAfterTheHosts) {
  results::AllReduceRow row;
  row.size_bytes = 4194304;
  row.count = 1048576;
  row.redop = "sum";
  row.time_us = 33554.4;
  row.algbw_gbps = 0.125;
  row.busbw_gbps = 0.125;
  std::vector<PairCheck> pairs = {{"ts-h0", "ts-h1", row, ""},
                                  {"ts-h0", "ts-h2", std::nullopt, "exit code 1: refused"}};
  const std::string table = format_pair_table(pairs);
  EXPECT_NE(
      table.find("# host A  host B        size        count     type  redop       time    algbw"
                 "    busbw  #wrong\n"),
      std::string::npos)
      << table;
  EXPECT_NE(
      table.find("   ts-h0   ts-h1     4194304      1048576    float    sum    33554.4    0.125"
                 "    0.125       0\n"),
      std::string::npos)
      << table;
  EXPECT_NE(table.find("   ts-h0   ts-h2  FAILED: exit code 1: refused\n"), std::string::npos)
      << table;
  EXPECT_NE(table.find("# Avg bus bandwidth    : 0.125"), std::string::npos) << table;
}

}  // namespace
}  // namespace trainscope::suites
