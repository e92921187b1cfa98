// The work lane (suites/work_lane.h): reading callgrind's dumps, the cycle
// estimate, the sums over steps, the comparison phase by phase and the
// repeats' agreement; and end to end where valgrind can run the build.
#include "suites/work_lane.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/run_command.h"
#include "tests/temp_dir.h"

namespace trainscope::suites {
namespace {

using results::WorkCount;

// A dump as callgrind 3.19 writes it (trailing zero events left out).
void write_dump(const std::filesystem::path& path, const std::string& trigger,
                const std::string& summary) {
  std::ofstream(path) << "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 7\n"
                      << "cmd:  trainscope train\npart: 3\n\ndesc: I1 cache: 32768 B, 64 B, 8-way "
                         "associative\ndesc: Timerange: Basic block 1 - 2\n"
                      << "desc: Trigger: Client Request: " << trigger << "\n\n"
                      << "positions: line\nevents: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\n"
                      << "summary: " << summary
                      << "\n\n"
                      // f calls memalign twice (inclusive 30 Ir); memalign's own cost
                      // is 20 Ir, 4 Dr; _int_malloc's 10 Ir, then memalign again (by id).
                      << "ob=(1) /lib/libc.so.6\nfl=(1) x.cpp\nfn=(1) f\n0 5\n"
                      << "cob=(1)\ncfi=(2) ./malloc/./malloc/malloc.c\ncfn=(2) memalign\n"
                      << "calls=2 0\n0 30 4\n\n"
                      << "fl=(2)\nfn=(2)\n0 12 3\n+2 8 1\n"
                      << "cfn=(3) _int_malloc\ncalls=2 0\n0 10\n\n"
                      << "fn=(3)\n0 10\n\n"
                      << "totals: " << summary << "\n";
}

TEST(WorkLaneTest, ReadsADumpAndEstimatesCycles) {
  testing::TempDir dir("work");
  write_dump(dir / "callgrind.7.3", "trainscope rank 1 step 2 phase forward",
             "1000 300 100 10 20 5 2 4");  // DLmw left out: 0
  const CallgrindDump d = parse_callgrind_dump(dir / "callgrind.7.3");
  EXPECT_EQ(d.trigger, "trainscope rank 1 step 2 phase forward");
  EXPECT_EQ(d.events.at("Ir"), 1000);
  EXPECT_EQ(d.events.at("DLmr"), 4);
  EXPECT_FALSE(d.events.contains("DLmw"));
  // The allocator's own cost: memalign's 20 Ir and 4 Dr, _int_malloc's 10
  // (its call from memalign is not a new allocation).
  EXPECT_EQ(d.allocator_events.at("Ir"), 30);
  EXPECT_EQ(d.allocator_events.at("Dr"), 4);
  EXPECT_EQ(d.allocator_calls, 2);
  WorkCount c;
  fill_counts(d, c);
  // Without the allocator: 970 instructions; accesses 970 + 296 + 100 =
  // 1366, L1 misses 35, of which RAM 6: L1 hits 1331, LL hits 29.
  EXPECT_EQ(c.instructions, 970);
  EXPECT_EQ(c.allocations, 2);
  EXPECT_EQ(c.ram_hits, 6);
  EXPECT_EQ(c.ll_hits, 29);
  EXPECT_EQ(c.l1_hits, 1331);
  EXPECT_EQ(c.est_cycles, 1331 + 5 * 29 + 35 * 6);
  EXPECT_EQ(c.l1_data_misses, 20 + 5);  // D1mr + D1mw: the instruction misses are not data
}

TEST(WorkLaneTest, ADumpOfOursWithoutASummaryIsAnErrorNamingIt) {
  testing::TempDir dir("work");
  // A wrapper's own file (it counted nothing) is no error: it is left out.
  std::ofstream(dir / "callgrind.8") << "events: Ir\ndesc: Trigger: Program termination\n";
  EXPECT_TRUE(parse_callgrind_dump(dir / "callgrind.8").events.empty());
  std::ofstream(dir / "callgrind.9")
      << "desc: Trigger: Client Request: trainscope rank 0 step 1 phase data\nevents: Ir\n";
  try {
    parse_callgrind_dump(dir / "callgrind.9");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("callgrind.9"), std::string::npos) << e.what();
  }
}

CallgrindDump dump(const std::string& trigger, int64_t ir) {
  CallgrindDump d;
  d.trigger = trigger;
  d.events = {{"Ir", ir}, {"Dr", 0}, {"Dw", 0}};
  return d;
}

TEST(WorkLaneTest, SumsEachRanksPhaseOverTheCountedSteps) {
  const std::vector<CallgrindDump> dumps = {
      dump("trainscope rank 0 step 0 phase forward", 1000),  // step 0: not counted
      dump("trainscope rank 0 step 1 phase forward", 10),
      dump("trainscope rank 0 step 2 phase forward", 11),
      dump("trainscope rank 1 step 1 phase forward", 20),
      dump("trainscope rank 0 step 1 phase backward", 30),
      dump("Program termination", 5)};
  const std::vector<WorkCount> sums = sum_dumps(dumps, 1);
  ASSERT_EQ(sums.size(), 3u);
  EXPECT_EQ(sums[0].phase, "backward");
  EXPECT_EQ(sums[0].instructions, 30);
  EXPECT_EQ(sums[1].phase, "forward");
  EXPECT_EQ(sums[1].rank, 0);
  EXPECT_EQ(sums[1].instructions, 21);
  EXPECT_EQ(sums[1].steps, 2);
  EXPECT_EQ(sums[2].rank, 1);
  EXPECT_EQ(sums[2].instructions, 20);
}

WorkCount count(const std::string& side, int repeat, const std::string& phase, int rank,
                int64_t instructions, int64_t cycles) {
  WorkCount c;
  c.side = side;
  c.repeat = repeat;
  c.case_name = "fused";
  c.rank = rank;
  c.phase = phase;
  c.instructions = instructions;
  c.est_cycles = cycles;
  return c;
}

TEST(WorkLaneTest, ComparesPhaseByPhaseOverRanks) {
  const std::vector<WorkCount> counts = {
      count("base", 0, "forward", 0, 1000, 2000), count("base", 0, "forward", 1, 1000, 2000),
      count("head", 0, "forward", 0, 1020, 2000), count("head", 0, "forward", 1, 1020, 2000),
      count("base", 0, "optimizer", 0, 500, 800), count("head", 0, "optimizer", 0, 500, 803),
      count("base", 0, "backward", 0, 900, 900),  count("head", 0, "backward", 0, 800, 800),
      count("base", 0, "data", 0, 50, 50)};
  const std::vector<WorkChange> changes = compare_work(counts, 1.0);
  ASSERT_EQ(changes.size(), 4u);
  EXPECT_EQ(changes[0].phase, "forward");
  EXPECT_EQ(changes[0].verdict, "REGRESSION");  // +2% instructions
  EXPECT_NEAR(changes[0].instructions_change_pct(), 2.0, 1e-9);
  EXPECT_EQ(changes[1].verdict, "PASS");  // +0.375% cycles
  EXPECT_EQ(changes[2].verdict, "IMPROVED");
  EXPECT_EQ(changes[3].verdict, "MISSING");  // the head counted no data phase
  // The same work with more allocations: shown, not a regression (the
  // backward phase's count varies run to run with the same binary).
  std::vector<WorkCount> allocating = {count("base", 0, "backward", 0, 1000, 2000),
                                       count("head", 0, "backward", 0, 1000, 2000)};
  allocating[0].allocations = 171;
  allocating[1].allocations = 198;
  const WorkChange more = compare_work(allocating, 1.0)[0];
  EXPECT_EQ(more.verdict, "PASS");
  EXPECT_EQ(more.head_allocations - more.base_allocations, 27);
}

// A fused kernel undone: the same instructions and nearly the same cycles (an
// LL hit costs 5), 2% more data lines through the L1. Judged where it
// repeats, in a one-rank case; with two ranks shown, not judged.
TEST(WorkLaneTest, DataTrafficIsJudgedInAOneRankCase) {
  std::vector<WorkCount> one_rank = {count("base", 0, "forward", 0, 100000, 200000),
                                     count("head", 0, "forward", 0, 100000, 200100)};
  one_rank[0].l1_data_misses = 5000;
  one_rank[1].l1_data_misses = 5100;
  const WorkChange fused = compare_work(one_rank, 1.0)[0];
  EXPECT_EQ(fused.verdict, "REGRESSION");
  EXPECT_TRUE(fused.traffic_judged);
  EXPECT_NEAR(fused.traffic_change_pct(), 2.0, 1e-9);
  EXPECT_NE(format_work_row(fused, 12).find("+2.000%"), std::string::npos);

  std::vector<WorkCount> two_ranks = one_rank;
  two_ranks.push_back(count("base", 0, "forward", 1, 100000, 200000));
  two_ranks.push_back(count("head", 0, "forward", 1, 100000, 200000));
  two_ranks[2].l1_data_misses = two_ranks[3].l1_data_misses = 5000;
  const WorkChange shared = compare_work(two_ranks, 1.0)[0];
  EXPECT_EQ(shared.verdict, "PASS");
  EXPECT_FALSE(shared.traffic_judged);
  EXPECT_NE(format_work_row(shared, 12).find("(+1.000%)"), std::string::npos);

  // Ten lines or fewer are no change, however small the phase.
  one_rank[0].l1_data_misses = 100;
  one_rank[1].l1_data_misses = 110;
  EXPECT_EQ(compare_work(one_rank, 1.0)[0].verdict, "PASS");
}

TEST(WorkLaneTest, RepeatsThatDifferAreNamed) {
  std::vector<WorkCount> counts = {count("head", 0, "forward", 0, 1000000, 2000000),
                                   count("head", 1, "forward", 0, 1000000, 2000900),
                                   count("head", 0, "data", 0, 8000, 12800),
                                   count("head", 1, "data", 0, 8000, 12836)};
  // 0.045% of the cycles; 0.28% of a small phase's, but 36 cycles: one build.
  EXPECT_TRUE(unstable_counts(counts).empty());
  counts[1].instructions = 1000001;  // instructions repeat exactly
  const std::vector<std::string> lines = unstable_counts(counts);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("head fused rank 0 forward"), std::string::npos) << lines[0];
  counts[1].instructions = 1000000;
  counts[0].l1_data_misses = 100000;  // L1 data misses repeat with one rank, within 0.5%
  counts[1].l1_data_misses = 100400;
  EXPECT_TRUE(unstable_counts(counts).empty());
  counts[1].l1_data_misses = 100600;
  EXPECT_EQ(unstable_counts(counts).size(), 1u);
  counts.push_back(count("head", 0, "forward", 1, 1000000, 2000000));
  EXPECT_TRUE(unstable_counts(counts).empty()) << "with two ranks they need not";
}

// Allocations are shown, not judged, and need not repeat: one binary's
// one-process backward counted 144 and 187 in two runs (the work lane's
// end-to-end test, whose --repeats 2 called that UNSTABLE on a CPU without
// AVX-512, where it runs).
TEST(WorkLaneTest, AllocationsThatDifferBetweenRepeatsAreNoInstability) {
  std::vector<WorkCount> counts = {count("base", 0, "backward", 0, 14174616, 22532071),
                                   count("base", 1, "backward", 0, 14174616, 22531927)};
  counts[0].allocations = 187;
  counts[1].allocations = 144;
  EXPECT_TRUE(unstable_counts(counts).empty());
}

// End to end: the head counted twice must agree to the instruction, and a
// head planting 3% more optimizer work must be named. Needs valgrind and a
// build it can run: with AVX-512 the test build (-march=native) cannot, and
// scripts/speed-gate.sh runs the lane on x86-64-v3 builds instead.
TEST(WorkLaneTest, CountsRepeatAndNameAPlantedRegression) {
  if (testing::run_shell("valgrind --version").exit_code != 0)
    GTEST_SKIP() << "valgrind is not installed";
  std::ifstream cpuinfo("/proc/cpuinfo");
  const std::string flags((std::istreambuf_iterator<char>(cpuinfo)), {});
  if (flags.find(" avx512f") != std::string::npos) {
    GTEST_SKIP() << "this CPU has AVX-512, which valgrind cannot run, and the test build is "
                    "-march=native; scripts/speed-gate.sh runs the work lane on x86-64-v3 builds";
  }
  testing::TempDir dir("work");
  std::ofstream(dir / "one.toml") << "name = \"one\"\n[base]\nmodel = \"tiny\"\n"
                                     "data = \"builtin:stories\"\nbatch = 4\nblock = 32\n"
                                     "steps = 4\n[[case]]\nname = \"p\"\nmode = \"naive\"\n";
  const std::string bin = testing::trainscope_binary();
  std::ofstream(dir / "planted") << "#!/bin/sh\nexport TRAINSCOPE_PLANT_WORK=3\nexec '" << bin
                                 << "' \"$@\"\n";
  std::filesystem::permissions(dir / "planted", std::filesystem::perms::owner_all);
  const auto same =
      testing::run_trainscope("work --repeats 2 --base " + bin + " --head " + bin + " --db " +
                              dir.file("w.db") + " " + dir.file("one.toml"));
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_NE(same.output.find("# verdict: PASS"), std::string::npos) << same.output;
  const auto planted =
      testing::run_trainscope("work --base " + bin + " --head " + dir.file("planted") + " --db " +
                              dir.file("w.db") + " " + dir.file("one.toml"));
  EXPECT_EQ(planted.exit_code, 1) << planted.output;
  EXPECT_NE(planted.output.find("optimizer  "), std::string::npos) << planted.output;
  EXPECT_NE(planted.output.find("REGRESSION"), std::string::npos) << planted.output;
}

}  // namespace
}  // namespace trainscope::suites
