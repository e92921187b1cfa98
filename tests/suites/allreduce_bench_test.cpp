// The all-reduce sweep: sizes, bus bandwidth, and a real 2-rank run under
// mpirun whose rows verify (wrong == 0) and have busbw == algbw (n = 2).
#include "suites/allreduce_bench.h"

#include <gtest/gtest.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/check.h"
#include "results/figures.h"
#include "results/records.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

namespace trainscope::suites {
namespace {

TEST(AllReduceBench, SweepSizes) {
  AllReduceOptions o;
  o.min_bytes = 8;
  o.max_bytes = 256ll << 20;
  o.factor = 4;
  const auto sizes = sweep_sizes(o);
  ASSERT_EQ(sizes.size(), 13u);  // 8 * 4^k for k = 0..12 is 8 B .. 128 MiB
  EXPECT_EQ(sizes.front(), 8);
  EXPECT_EQ(sizes.back(), 8ll << 24);
  o.factor = 2;
  EXPECT_EQ(sweep_sizes(o).size(), 26u);
  EXPECT_EQ(sweep_sizes(o).back(), 256ll << 20);
  o.min_bytes = 6;  // rounded down to whole floats
  o.max_bytes = 24;
  EXPECT_EQ(sweep_sizes(o), (std::vector<int64_t>{4, 12, 24}));
  o.dtype = options::CommDtype::kBf16;  // whole bf16 elements: 2 bytes
  o.min_bytes = 3;
  o.max_bytes = 27;
  EXPECT_EQ(sweep_sizes(o), (std::vector<int64_t>{2, 6, 12, 24}));
}

TEST(AllReduceBench, BusBandwidth) {
  EXPECT_DOUBLE_EQ(bus_bandwidth(10.0, 1), 10.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth(10.0, 2), 10.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth(10.0, 4), 15.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth(10.0, 8), 17.5);
}

TEST(AllReduceBench, BadOptions) {
  AllReduceOptions o;
  o.factor = 1;
  EXPECT_THROW(validate(o), Error);
  o = {};
  o.min_bytes = 2;
  EXPECT_THROW(validate(o), Error);
  o = {};
  o.max_bytes = 4;
  EXPECT_THROW(validate(o), Error);
  o = {};
  o.dtype = options::CommDtype::kBf16;
  o.min_bytes = 2;  // one bf16 element
  EXPECT_NO_THROW(validate(o));
  o.min_bytes = 1;
  EXPECT_THROW(validate(o), Error);
}

// `trainscope allreduce-bench` on 2 ranks under mpirun, over loopback.
constexpr const char* kTwoRankBench =
    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 2 --oversubscribe "
    "--bind-to none --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo " TRAINSCOPE_BINARY_DIR
    "/trainscope allreduce-bench ";

// kTwoRankBench ARGS --jsonl ...: exit 0 asserted, its rows and its output.
struct Sweep {
  std::vector<results::AllReduceRow> rows;
  std::string out;
};
void run_two_rank_sweep(const std::string& args, Sweep* sweep) {
  testing::TempDir dir("ar-sweep");
  const std::string cmd = std::string(kTwoRankBench) + args + " --jsonl " +
                          (dir / "rows.jsonl").string() + " > " + (dir / "out.txt").string() +
                          " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  sweep->rows = results::load_allreduce_rows(dir / "rows.jsonl");
  std::ifstream in(dir / "out.txt");
  sweep->out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(AllReduceBench, TwoRanksUnderMpirun) {
  Sweep sweep;
  ASSERT_NO_FATAL_FAILURE(
      run_two_rank_sweep("--min-bytes 8 --max-bytes 4M --factor 4 --iters 3 --warmup 1", &sweep));
  const auto& rows = sweep.rows;
  ASSERT_EQ(rows.size(), 10u);  // 8 B .. 2 MiB in x4 steps (8 MiB would pass 4 MiB)
  for (const auto& r : rows) {
    EXPECT_EQ(r.wrong, 0) << r.size_bytes;
    EXPECT_EQ(r.world_size, 2);
    EXPECT_EQ(r.count * 4, r.size_bytes);
    EXPECT_GT(r.time_us, 0);
    EXPECT_GT(r.algbw_gbps, 0);
    EXPECT_DOUBLE_EQ(r.busbw_gbps, r.algbw_gbps);
    // Each call's slowest rank: no call beats the slowest rank's mean, and
    // the calls' mean is at least it.
    ASSERT_EQ(r.call_time_us.size(), 3u) << r.size_bytes;
    double sum = 0;
    for (double t : r.call_time_us) {
      EXPECT_GT(t, 0);
      sum += t;
    }
    EXPECT_GE(sum / 3, r.time_us * (1 - 1e-9)) << r.size_bytes;
    EXPECT_EQ(results::call_busbw_gbps(r).size(), 3u);
  }
  EXPECT_NE(sweep.out.find("# Out of bounds values : 0 OK"), std::string::npos) << sweep.out;
  EXPECT_NE(sweep.out.find("(GB/s)"), std::string::npos) << sweep.out;
}

// Float buffers sent as bf16 (--comm-dtype bf16) over every algorithm: sizes
// count the bytes sent (2 per element), each row says bf16, every element is
// the sum; sizes read with suffixes (1M), as nccl-tests reads them.
TEST(AllReduceBench, Bf16OnTheWireUnderMpirun) {
  for (const std::string algorithm : {"mpi", "shm", "hier"}) {
    Sweep sweep;
    ASSERT_NO_FATAL_FAILURE(run_two_rank_sweep(
        "--comm-dtype bf16 --allreduce " + algorithm +
            " --min-bytes 2 --max-bytes 1M --factor 8 --iters 2 --warmup 1 --no-copy-probe",
        &sweep));
    ASSERT_EQ(sweep.rows.size(), 7u) << algorithm;  // 2 B .. 512 KiB in x8 steps
    EXPECT_EQ(sweep.rows.back().size_bytes, 512 << 10);
    for (const auto& r : sweep.rows) {
      EXPECT_EQ(r.wrong, 0) << algorithm << " " << r.size_bytes;
      EXPECT_EQ(r.dtype, "bfloat16") << r.size_bytes;
      EXPECT_EQ(r.count * 2, r.size_bytes);
    }
    EXPECT_NE(sweep.out.find("float buffers sent as bf16"), std::string::npos) << sweep.out;
    EXPECT_NE(sweep.out.find("     bf16    sum"), std::string::npos) << sweep.out;
  }
}

// The shared-memory algorithms through the same sweep: every element right at
// every size (uneven slices included: 4 B is one float over two ranks), and
// the copy probe printed beside the largest size.
TEST(AllReduceBench, SharedMemoryAlgorithmsVerifyUnderMpirun) {
  for (const std::string algorithm : {"shm", "hier"}) {
    Sweep sweep;
    ASSERT_NO_FATAL_FAILURE(
        run_two_rank_sweep("--allreduce " + algorithm +
                               " --min-bytes 4 --max-bytes 1048580 --factor 4 --iters 3 "
                               "--warmup 1",
                           &sweep));
    ASSERT_EQ(sweep.rows.size(), 10u) << algorithm;  // 4 B .. 1 MiB in x4 steps
    for (const auto& r : sweep.rows) {
      EXPECT_EQ(r.wrong, 0) << algorithm << " " << r.size_bytes;
      EXPECT_GT(r.busbw_gbps, 0) << algorithm << " " << r.size_bytes;
      EXPECT_EQ(r.algorithm, algorithm) << r.size_bytes;  // recorded as run
    }
    EXPECT_NE(sweep.out.find("algorithm " + algorithm), std::string::npos) << sweep.out;
    EXPECT_NE(sweep.out.find("# Copy probe"), std::string::npos) << sweep.out;
    EXPECT_NE(sweep.out.find("# busbw / copy probe"), std::string::npos) << sweep.out;
  }
}

// A window larger than /dev/shm would be created and then kill the job with
// SIGBUS on first touch: it is refused first, once, naming what it needs.
TEST(AllReduceBench, AWindowLargerThanDevShmIsAClearError) {
  struct statvfs fs {};
  ASSERT_EQ(::statvfs("/dev/shm", &fs), 0);
  const double room = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
  const double max_bytes = 16.0 * (1ll << 30);  // allreduce-bench's limit
  if (2 * max_bytes <= room) GTEST_SKIP() << "/dev/shm holds two 16 GiB windows here";
  const std::string cmd =
      std::string(kTwoRankBench) + "--allreduce shm --min-bytes 16G --max-bytes 16G 2>&1";
  const testing::CommandResult r = testing::run_shell(cmd);
  EXPECT_NE(r.exit_code, 0) << r.output;
  const std::string message =
      "--allreduce shm: the shared window needs 32.00 GiB in /dev/shm "
      "for the 2 ranks";
  const std::size_t at = r.output.find(message);
  EXPECT_NE(at, std::string::npos) << r.output;
  // Every rank refused alike: printed once, by rank 0.
  EXPECT_EQ(r.output.find(message, at + 1), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("SIGBUS"), std::string::npos) << r.output;
}

// The one-process stand-in's shm buffer is ordinary memory: a /dev/shm too
// small for it (Docker's default is 64 MiB) must not refuse it. Run in a
// mount namespace whose /dev/shm is a 1 MiB tmpfs, where one can be made.
TEST(AllReduceBench, OneProcessShmDoesNotNeedRoomInDevShm) {
  const std::string tiny_shm = "unshare -m sh -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm && ";
  if (testing::run_shell(tiny_shm + "true' 2>&1").exit_code != 0) {
    GTEST_SKIP() << "no mount namespace here (unshare -m needs CAP_SYS_ADMIN)";
  }
  const testing::CommandResult r = testing::run_shell(
      tiny_shm + "exec " TRAINSCOPE_BINARY_DIR
                 "/trainscope allreduce-bench --comm local "
                 "--allreduce shm --min-bytes 4194304 --max-bytes 4194304 --iters 1 --warmup 0 "
                 "--no-copy-probe' 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("/dev/shm"), std::string::npos) << r.output;
}

TEST(AllReduceBench, CopyProbeLinesSayWhatTheyCompare) {
  results::AllReduceRow largest;
  largest.size_bytes = 1024;
  largest.busbw_gbps = 3.0;
  const std::string s = format_copy_probe(largest, 6.0, 2);
  EXPECT_NE(s.find("6.000 GB/s per rank (2 ranks copying 1024 B at once"), std::string::npos) << s;
  EXPECT_NE(s.find("50% at 1024 B"), std::string::npos) << s;
}

}  // namespace
}  // namespace trainscope::suites
