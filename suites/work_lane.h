// The deterministic work lane of the speed gate (`trainscope work`): a
// suite's cases run under valgrind's callgrind, counting only the compute
// phases of their steps (profiler/work_counter.h), and two builds compared
// phase by phase.
//
// Counts repeat where times do not: the same binary, inputs and environment
// execute the same instructions whatever else the machine does (SQLite
// gates its performance on cachegrind counts; CodSpeed and iai-callgrind on
// callgrind's). To make them repeat, each run:
//  * has ASLR off (setarch -R over the whole job) and one thread a rank;
//  * pins every choice made by timing or by CPU: --gemm openblas (auto picks
//    a library by timing it), OPENBLAS_CORETYPE=Haswell, DNNL_MAX_CPU_ISA=AVX2
//    and TRAINSCOPE_MAX_CPU_ISA=avx2 (valgrind runs no AVX-512, so the
//    binaries themselves must be built without it: TRAINSCOPE_MARCH);
//  * simulates a fixed cache geometry (32 KiB 8-way L1s, 8 MiB 16-way LL),
//    from which each phase's cycles are estimated: L1 hits + 5 x LL hits +
//    35 x RAM accesses (iai-callgrind's model);
//  * counts steps 1 .. steps-1 (step 0 pays one-time set-up inside its
//    phases: first-touch allocations, library initialisation);
//  * trains the tiny model at batch 4 x 32 by default (WorkOptions::model):
//    the counts are of the code, and callgrind's cache simulation of dense
//    AVX2 GEMMs is about 1000x slower than the CPU.
// Blind spots, written down: no AVX-512 paths, threads serialised, waiting
// (communication, sleeps) not counted, 20-100x slower than native.
//
// The verdict per case and phase: REGRESSION when the head's instructions,
// estimated cycles or L1 data misses (its data traffic past the L1: what a
// fused kernel saves, and the estimate weighs at 5 an LL hit however much
// bandwidth it takes; judged in one-rank cases, where they repeat) exceed
// the base's by more than threshold_pct; its allocations are shown beside
// them, not judged (they vary run to run). With
// repeats > 1 each side runs several times and its counts must agree within
// kRepeatTolerancePct (else the lane says which phase moved: an input to the
// count that is not pinned).
//
// Thread-safety: one thread; it starts children.
#ifndef TRAINSCOPE_SUITES_WORK_LANE_H_
#define TRAINSCOPE_SUITES_WORK_LANE_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "results/comparison_records.h"
#include "suites/runner.h"
#include "suites/suite_config.h"

namespace trainscope::suites {

// Instructions repeat exactly (allocations do not: shown, never compared).
// Estimated cycles do not quite: the simulated caches also see the other threads' accesses (the
// watchdog, MPI's progress) in the order the scheduler interleaves them, a
// few misses either way. So cycles of one build may differ by this much
// (percent), or by kCycleNoiseFloor in a small phase, and still be one
// build's; a change of cycles must pass both to be a regression.
inline constexpr double kRepeatTolerancePct = 0.1;
inline constexpr int64_t kCycleNoiseFloor = 10 * 35;  // ten RAM accesses
// L1 data misses likewise: a change of ten lines or fewer is no change. In
// one rank's runs they moved by up to 0.145% a phase between runs of one
// binary (20 A/A runs of the gate suite): repeats may differ by this much.
inline constexpr int64_t kTrafficNoiseFloor = 10;
inline constexpr double kTrafficRepeatTolerancePct = 0.5;

struct WorkOptions {
  // db_path, mpirun, filter, timeout (per run; default 30 min), out,
  // progress and command_line are used.
  RunnerOptions runner;
  std::filesystem::path base_binary;  // empty: count the head alone
  std::filesystem::path head_binary;
  int repeats = 1;  // runs of each side
  int steps = 4;    // each run's steps; steps 1.. are counted
  // What each case trains under the lane ("" / 0: the case's own). Counts
  // measure the code, not the model's size, and callgrind runs dense FMA
  // code some 1000x slower than the CPU: the tiny model keeps a run to
  // seconds where the gate's model took minutes.
  std::string model = "tiny";
  int batch = 4;
  int block = 32;
  double threshold_pct = 1;  // a phase's work up by more is a regression
  std::string valgrind = "valgrind";
  // Keep each run's callgrind files here, DIR/SIDE-CASE-REPEAT/ (for
  // callgrind_annotate); empty: they go with the run's temporary folder.
  std::filesystem::path keep_dumps;
};

// One case's phase, base against head (summed over ranks and counted steps;
// the first repeat of each side).
struct WorkChange {
  std::string case_name;
  std::string phase;
  int64_t base_instructions = 0, head_instructions = 0;
  int64_t base_cycles = 0, head_cycles = 0;
  int64_t base_traffic = 0, head_traffic = 0;  // L1 data misses
  bool traffic_judged = false;                 // one rank: they repeat (compare_work)
  int64_t base_allocations = 0, head_allocations = 0;
  std::string verdict;  // PASS, REGRESSION (work up), IMPROVED, MISSING
  double instructions_change_pct() const;
  double cycles_change_pct() const;
  double traffic_change_pct() const;
};

struct WorkResult {
  int64_t comparison_id = 0;
  std::string verdict;  // PASS, REGRESSION, FAILED (a run), UNSTABLE (repeats differ)
  std::vector<results::WorkCount> counts;
  std::vector<WorkChange> changes;
  std::vector<std::string> problems;  // failed runs, repeats that differ
  int exit_code() const;              // 0 PASS, 1 otherwise
};

// Bad input (binaries, valgrind missing, the plan) throws Error before the
// database is opened.
WorkResult run_work_lane(const Suite& suite, const WorkOptions& options);

// ---- pieces, exposed for tests ----

// The events of one callgrind dump file: its description's trigger ("trainscope
// rank 0 step 3 phase forward"), the summary's events by name, and the part
// of them spent inside glibc's allocator (its functions' own cost) with the
// calls made into it from outside. The allocator's own cost depends on the
// state of its free lists, which other threads change at moments the
// scheduler picks (a chunk freed by the thread it was handed to; libgomp's
// team allocated per parallel region): the counts leave it out, and the
// number of allocations is shown beside the counts.
struct CallgrindDump {
  std::string trigger;
  std::map<std::string, int64_t, std::less<>> events;
  std::map<std::string, int64_t, std::less<>> allocator_events;
  int64_t allocator_calls = 0;
};
CallgrindDump parse_callgrind_dump(const std::filesystem::path& path);

// A dump's counts as a WorkCount (instructions, hits by level, estimate;
// the allocator's own cost left out, its calls counted).
void fill_counts(const CallgrindDump& dump, results::WorkCount& count);

// Sums each (rank, phase) of a run's dumps over steps >= first_step.
std::vector<results::WorkCount> sum_dumps(const std::vector<CallgrindDump>& dumps,
                                          int64_t first_step);

// Base against head, phase by phase (first repeat of each side).
std::vector<WorkChange> compare_work(const std::vector<results::WorkCount>& counts,
                                     double threshold_pct);

// Repeats of one side that differ by more than kRepeatTolerancePct: one line
// each, naming the side, case, rank and phase.
std::vector<std::string> unstable_counts(const std::vector<results::WorkCount>& counts);

std::string format_work_header(int name_width);
std::string format_work_row(const WorkChange& c, int name_width);

}  // namespace trainscope::suites

#endif  // TRAINSCOPE_SUITES_WORK_LANE_H_
