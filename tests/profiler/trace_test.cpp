#include "profiler/trace.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/check.h"

namespace trainscope::profiler {
namespace {

using nlohmann::json;

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("trainscope_trace_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// A rank whose events start at `base_ns` on its own clock.
std::string fake_rank(int rank, const std::string& host, int64_t base_ns) {
  TraceRecorder r(rank, host);
  const uint32_t fwd = r.intern("forward");
  const uint32_t ar = r.intern("all_reduce");
  r.record(fwd, Track::kCompute, base_ns, 1'000'000, 0);
  r.record(ar, Track::kComm, base_ns + 1'000'000, 500'000, 0, {.bytes = 1 << 20, .bucket = 3});
  return r.serialize();
}

TEST(TraceTest, MergedTraceHasEveryRankShiftedByItsOffset) {
  // Rank 1's clock runs 5 s ahead of rank 0's; both ranks did their forward
  // at the same true instant, so after the shift they must line up.
  const int64_t t = 1'000'000'000'000;
  const int64_t offset = 5'000'000'000;
  const std::vector<RankTrace> ranks = {{fake_rank(0, "nodeA", t), 0},
                                        {fake_rank(1, "nodeB", t + offset), offset}};
  const std::string path = temp_path("merged.json");
  write_merged_chrome_trace(path, ranks);
  const json j = json::parse(read_all(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())));

  std::map<int, std::string> process_names;
  std::map<std::pair<int, std::string>, json> complete;
  for (const json& e : j.at("traceEvents")) {
    if (e["ph"] == "M" && e["name"] == "process_name") process_names[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "X") complete[{e["pid"].get<int>(), e["name"].get<std::string>()}] = e;
  }
  EXPECT_EQ(process_names[0], "rank 0 (nodeA)");
  EXPECT_EQ(process_names[1], "rank 1 (nodeB)");
  ASSERT_EQ(complete.size(), 4u);
  for (int rank : {0, 1}) {
    const json& fwd = complete.at({rank, "forward"});
    const json& ar = complete.at({rank, "all_reduce"});
    EXPECT_DOUBLE_EQ(fwd["ts"].get<double>(), 0.0) << rank;  // microseconds
    EXPECT_DOUBLE_EQ(fwd["dur"].get<double>(), 1000.0);
    EXPECT_EQ(fwd["tid"], 1);
    EXPECT_EQ(ar["tid"], 2);
    EXPECT_DOUBLE_EQ(ar["ts"].get<double>(), 1000.0);
    EXPECT_EQ(ar["args"]["bytes"], 1 << 20);
    EXPECT_EQ(ar["args"]["bucket"], 3);
    EXPECT_EQ(ar["args"]["step"], 0);
  }
  std::remove(path.c_str());
}

TEST(TraceTest, WrongOffsetWouldMisalignRanks) {
  // Same data as above with offset 0: rank 1 lands 5 s later. Guards against
  // a merge that ignores offsets.
  const int64_t t = 1'000'000'000'000;
  const std::vector<RankTrace> ranks = {{fake_rank(0, "a", t), 0},
                                        {fake_rank(1, "b", t + 5'000'000'000), 0}};
  const json j = json::parse(merge_chrome_traces(ranks));
  double rank1_fwd = -1;
  for (const json& e : j["traceEvents"])
    if (e["ph"] == "X" && e["pid"] == 1 && e["name"] == "forward") rank1_fwd = e["ts"];
  EXPECT_DOUBLE_EQ(rank1_fwd, 5e6);
}

TEST(TraceTest, SingleRankWriteAndDisabledRecorder) {
  TraceRecorder r(0, "solo");
  const uint32_t id = r.intern("step");
  EXPECT_EQ(r.intern("step"), id);
  r.record(id, Track::kCompute, 10, 20, 1);
  r.set_enabled(false);
  r.record(id, Track::kCompute, 30, 20, 1);
  EXPECT_EQ(r.size(), 1u);
  const std::string path = temp_path("single.json");
  r.write_chrome_trace(path);
  const json j = json::parse(read_all(path));
  int complete = 0;
  for (const json& e : j["traceEvents"]) complete += e["ph"] == "X";
  EXPECT_EQ(complete, 1);
  std::remove(path.c_str());
}

TEST(TraceTest, MalformedRankDataNamesTheEntry) {
  const std::vector<RankTrace> ranks = {{fake_rank(0, "a", 0), 0}, {"{not json", 0}};
  try {
    merge_chrome_traces(ranks);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank entry 1"), std::string::npos) << e.what();
  }
}

TEST(TraceTest, UnwritablePathIsAnErrorNamingIt) {
  const RankTrace one{fake_rank(0, "a", 0), 0};
  try {
    write_merged_chrome_trace("/nonexistent_dir_xyz/trace.json", std::span(&one, 1));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent_dir_xyz/trace.json"), std::string::npos);
  }
}

kernels::MemorySnapshot memory_with(int64_t parameters, int64_t activations) {
  kernels::MemorySnapshot m;
  m.by_category[static_cast<int>(kernels::MemoryCategory::kParameters)].active = parameters;
  m.by_category[static_cast<int>(kernels::MemoryCategory::kActivations)].active = activations;
  return m;
}

TEST(TraceTest, MergedTraceHasMemoryCountersAndClockOffsets) {
  TraceRecorder r(1, "b");
  r.record_memory(2'000'000, memory_with(100, 7));
  r.record(r.intern("forward"), Track::kCompute, 3'000'000, 1000, 0);
  const std::vector<RankTrace> ranks = {{fake_rank(0, "a", 1'000'000), 0},
                                        {r.serialize(), 1'000'000}};
  const json j = json::parse(merge_chrome_traces(ranks));
  EXPECT_EQ(j["otherData"]["clock_offsets_ns"], json::array({0, 1'000'000}));
  int counters = 0;
  for (const json& e : j["traceEvents"]) {
    if (e["ph"] != "C") continue;
    ++counters;
    EXPECT_EQ(e["pid"], 1);
    EXPECT_EQ(e["name"], "tracked memory");
    EXPECT_EQ(e["args"]["parameters"], 100);
    EXPECT_EQ(e["args"]["activations"], 7);
    EXPECT_EQ(e["args"]["data"], 0);
    EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 0.0);  // 2 ms on rank 1 is 1 ms on rank 0: the origin
  }
  EXPECT_EQ(counters, 1);
}

TEST(TraceTest, RankTracePathInsertsTheRankBeforeTheExtension) {
  EXPECT_EQ(rank_trace_path("out/run.trace.json", 1), "out/run.trace.rank1.json");
  EXPECT_EQ(rank_trace_path("t", 0), "t.rank0");
}

TEST(TraceStreamTest, TheFileIsWholeJsonAfterEveryFlush) {
  const std::string path = temp_path("stream.json");
  TraceRecorder r(1, "nodeB");
  const uint32_t fwd = r.intern("forward");
  const int64_t offset = 5'000'000;
  {
    TraceStream stream(r, {.path = path, .clock_offset_ns = offset, .flush_interval_s = 3600});
    json j = json::parse(read_all(path));  // made at once: metadata, no events yet
    EXPECT_EQ(j["otherData"]["rank"], 1);
    EXPECT_EQ(j["otherData"]["clock_offset_ns"], offset);
    EXPECT_EQ(j["traceEvents"].size(), 6u);
    for (int k = 0; k < 3; ++k) {
      r.record(fwd, Track::kCompute, offset + 1'000'000 * k, 500'000, k);
      r.record_memory(offset + 1'000'000 * k + 600'000, memory_with(100 + k, 0));
      stream.flush();
      j = json::parse(read_all(path));
      EXPECT_EQ(j["traceEvents"].size(), 6u + 2 * (k + 1)) << k;
    }
    r.record(fwd, Track::kCompute, offset + 9'000'000, 1, 9);  // left for the destructor
  }
  const json j = json::parse(read_all(path));
  std::vector<double> starts;
  int counters = 0;
  for (const json& e : j["traceEvents"]) {
    if (e["ph"] == "X") starts.push_back(e["ts"].get<double>());
    if (e["ph"] == "C") {
      EXPECT_EQ(e["args"]["parameters"], 100 + counters++);
    }
    EXPECT_EQ(e["pid"], 1);
  }
  // Each event once, in order, on rank 0's clock (this rank's minus its offset).
  EXPECT_EQ(starts, (std::vector<double>{0, 1000, 2000, 9000}));
  EXPECT_EQ(counters, 3);
  std::remove(path.c_str());
}

TEST(TraceStreamTest, FlushesOnItsOwnWhileTheRunGoes) {
  const std::string path = temp_path("follow.json");
  TraceRecorder r(0, "a");
  TraceStream stream(r, {.path = path, .flush_interval_s = 0.02});
  r.record(r.intern("forward"), Track::kCompute, 0, 1, 0);
  size_t events = 0;
  for (int i = 0; i < 500 && events < 7; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    events = json::parse(read_all(path))["traceEvents"].size();
  }
  EXPECT_EQ(events, 7u);
  std::remove(path.c_str());
}

TEST(TraceStreamTest, UnwritablePathIsAnErrorNamingIt) {
  TraceRecorder r(0, "a");
  try {
    TraceStream stream(r, {.path = "/nonexistent_dir_xyz/t.rank0.json"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent_dir_xyz/t.rank0.json"), std::string::npos);
  }
}

TEST(ClockOffsetTest, PicksLeastRoundTripSample) {
  // True offset +1000 ns. Sample 1 has symmetric 100 ns delays (exact);
  // sample 0 has a 5000 ns queueing delay on the way back (biased).
  const int64_t off = 1000;
  const std::vector<PingPongSample> samples = {
      {0, 100 + off, 150 + off, 150 + 100 + 5000},
      {10'000, 10'100 + off, 10'150 + off, 10'250},
  };
  const ClockOffset c = estimate_clock_offset(samples);
  EXPECT_EQ(c.offset_ns, off);
  EXPECT_EQ(c.round_trip_ns, 200);
}

}  // namespace
}  // namespace trainscope::profiler
