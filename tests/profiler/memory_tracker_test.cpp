#include "profiler/memory_tracker.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "profiler/proc_fs.h"

namespace trainscope::profiler {
namespace {

using kernels::Buffer;

TEST(MemoryTrackerTest, ActiveAndPeakByCategory) {
  reset_peak_memory();
  const int64_t base_total = active_memory();
  const int64_t base_grad = active_memory(MemoryCategory::kGradients);
  {
    Buffer<float> g(1 << 18, MemoryCategory::kGradients);  // 1 MiB
    EXPECT_EQ(active_memory(MemoryCategory::kGradients) - base_grad, 1 << 20);
    EXPECT_EQ(active_memory() - base_total, 1 << 20);
  }
  EXPECT_EQ(active_memory(MemoryCategory::kGradients), base_grad);
  EXPECT_GE(peak_memory(MemoryCategory::kGradients) - base_grad, 1 << 20);
  EXPECT_GE(peak_memory() - base_total, 1 << 20);
  reset_peak_memory();
  EXPECT_EQ(peak_memory(MemoryCategory::kGradients), active_memory(MemoryCategory::kGradients));
  EXPECT_EQ(peak_memory(), active_memory());
}

TEST(MemoryTrackerTest, ProcessViewSeesTouchedPages) {
  const ProcessMemory before = self_process_memory();
  ASSERT_GT(before.rss_bytes, 0);
  ASSERT_GE(before.hwm_bytes, before.rss_bytes);
  Buffer<char> big(64 << 20, MemoryCategory::kActivations);
  std::memset(big.data(), 1, big.size());  // make the pages resident
  const MemoryRecord r = memory_record(3, true, true);
  EXPECT_EQ(r.step, 3);
  EXPECT_GE(r.process.rss_bytes - before.rss_bytes, 60 << 20);
  EXPECT_GE(r.process.hwm_bytes, r.process.rss_bytes);
  EXPECT_GE(r.tracked[MemoryCategory::kActivations].active, 64 << 20);
  EXPECT_EQ(r.untracked_bytes(), r.process.rss_bytes - r.tracked.total.active);
  if (r.process.pss_bytes >= 0) {
    EXPECT_GE(r.process.pss_bytes, 60 << 20);
  }
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["tracked"]["by_category"]["activations"]["active"].get<int64_t>(),
            r.tracked[MemoryCategory::kActivations].active);
  EXPECT_EQ(j["process"]["rss_bytes"].get<int64_t>(), r.process.rss_bytes);
}

// Large tracked buffers are advised onto transparent huge pages
// (kernels/storage.cpp); the process view says how much of the process is.
TEST(MemoryTrackerTest, LargeBuffersAreCountedOnHugePages) {
  std::string thp;
  if (read_small_file("/sys/kernel/mm/transparent_hugepage/enabled", &thp) != 0 ||
      thp.find("[never]") != std::string::npos) {
    GTEST_SKIP() << "transparent huge pages are off or unknown on this machine: " << thp;
  }
  const int64_t before = self_process_memory(true).huge_bytes;
  ASSERT_GE(before, 0) << "AnonHugePages read from /proc/self/smaps_rollup";
  Buffer<float> big(int64_t{16} << 20, MemoryCategory::kOptimizerState);  // 64 MiB, touched
  EXPECT_GT(self_process_memory(true).huge_bytes, before)
      << "a 64 MiB tracked buffer got no huge page (memory too fragmented?)";
}

TEST(MemoryTrackerTest, RecordWithoutProcessViewHasUnknownRss) {
  const MemoryRecord r = memory_record(0, false);
  EXPECT_EQ(r.process.rss_bytes, -1);
  EXPECT_EQ(r.untracked_bytes(), -1);
}

TEST(ProcFsTest, ParsesKbFields) {
  const std::string status = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t 1024 kB\n";
  EXPECT_EQ(parse_kb_field(status, "VmRSS:"), 1024 * 1024);
  EXPECT_EQ(parse_kb_field(status, "VmHWM:"), 2048 * 1024);
  EXPECT_EQ(parse_kb_field(status, "Pss:"), -1);
  EXPECT_EQ(parse_kb_field("Pss_Anon: 5 kB\nPss: 7 kB\n", "Pss:"), 7 * 1024);
}

TEST(ProcFsTest, ParsesStatWithAwkwardComm) {
  const std::string stat =
      "4242 (a b) (c)) S 17 4242 4242 0 -1 4194304 100 0 0 0 11 22 0 0 20 0 1 0 5 1000 333 "
      "18446744073709551615";
  ProcStat s;
  ASSERT_TRUE(parse_proc_stat(stat, &s));
  EXPECT_EQ(s.pid, 4242);
  EXPECT_EQ(s.comm, "a b) (c)");
  EXPECT_EQ(s.state, 'S');
  EXPECT_EQ(s.ppid, 17);
  EXPECT_EQ(s.utime_ticks, 11u);
  EXPECT_EQ(s.stime_ticks, 22u);
  EXPECT_EQ(s.rss_pages, 333);
  EXPECT_FALSE(parse_proc_stat("garbage", &s));
  EXPECT_FALSE(parse_proc_stat("12 (x)", &s));
}

TEST(ProcFsTest, FindsEnvironValues) {
  using namespace std::string_literals;
  const std::string env = "PATH=/bin\0OMPI_COMM_WORLD_RANK=3\0RANK=\0"s;  // keeps the NULs
  std::string v;
  ASSERT_TRUE(find_environ_value(env, "OMPI_COMM_WORLD_RANK", &v));
  EXPECT_EQ(v, "3");
  EXPECT_FALSE(find_environ_value(env, "PMI_RANK", &v));
  EXPECT_FALSE(find_environ_value(env, "OMPI_COMM", &v));  // prefix only
  EXPECT_EQ(read_small_file("/proc/definitely/not/here", &v), ENOENT);
}

}  // namespace
}  // namespace trainscope::profiler
