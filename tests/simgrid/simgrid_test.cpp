// SimGrid's SMPI replay of a step (simgrid/): the files trainscope writes for
// it, and simulated all-reduces against the ring formula.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "comm/grad_sync.h"
#include "simgrid/platform.h"
#include "simgrid/simulation.h"
#include "simgrid/step_profile.h"

namespace trainscope::simgrid {
namespace {

std::string runtime_error_of(const std::string& text) {
  try {
    parse_step_profile(text, "p.txt");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

TEST(StepProfileTest, FormatsAndParsesBack) {
  StepProfile p;
  p.forward_s = 0.031;
  p.backward_s = 0.0625;
  p.other_s = 0.012;
  p.bucket_bytes = {67108864, 41943040};
  p.ready = {0.6, 1.0};
  p.overlap = true;
  p.steps = 7;
  p.compute_samples = {0.1, 0.11};
  const StepProfile q = parse_step_profile(format_step_profile(p), "p.txt");
  EXPECT_EQ(q.forward_s, p.forward_s);
  EXPECT_EQ(q.backward_s, p.backward_s);
  EXPECT_EQ(q.other_s, p.other_s);
  EXPECT_EQ(q.bucket_bytes, p.bucket_bytes);
  EXPECT_EQ(q.ready, p.ready);
  EXPECT_TRUE(q.overlap);
  EXPECT_EQ(q.collective, Collective::kRing);
  EXPECT_EQ(q.steps, 7);
  EXPECT_EQ(q.compute_samples, p.compute_samples);
}

TEST(StepProfileTest, BadInputNamesFileLineAndKey) {
  EXPECT_EQ(runtime_error_of("buckets 8\nforward_s x\n"), "p.txt:2: forward_s: not a number: x");
  EXPECT_EQ(runtime_error_of("buckets 8\nsteps 0\n"), "p.txt:2: steps: must be at least 1, got 0");
  EXPECT_NE(runtime_error_of("buckets 8\nspeed 3\n").find("p.txt:2: speed: unknown key"),
            std::string::npos);
  EXPECT_EQ(runtime_error_of("forward_s 1\n"), "p.txt: no buckets line");
  EXPECT_EQ(runtime_error_of("buckets 8 8\nready 1\n"), "p.txt: ready has 1 values for 2 buckets");
  EXPECT_NE(runtime_error_of("buckets 8\noverlap 1\ncollective mpi\n").find("overlap needs"),
            std::string::npos);
}

// The buckets SimGrid reduces are the engine's (comm::bucket_ranges), in its order.
TEST(StepProfileTest, BucketsAreTheEnginesInItsOrder) {
  for (int64_t bucket : {int64_t{0}, int64_t{4096}, int64_t{10000}, int64_t{1} << 20}) {
    const int64_t floats = 300001;
    const auto ranges = comm::bucket_ranges(floats, bucket);
    const auto bytes = split_into_buckets(4 * floats, bucket);
    ASSERT_EQ(bytes.size(), ranges.size()) << bucket;
    for (std::size_t i = 0; i < ranges.size(); ++i) EXPECT_EQ(bytes[i], 4 * ranges[i].numel) << i;
  }
}

TEST(StepProfileTest, ReadyAsBackwardReachesEachBucket) {
  StepProfile p;
  p.bucket_bytes = {300, 100};
  EXPECT_DOUBLE_EQ(ready_fraction(p, 0), 0.75);
  EXPECT_DOUBLE_EQ(ready_fraction(p, 1), 1.0);
  p.compute_samples = {1, 3};
  for (int rank = 0; rank < 4; ++rank) {
    const double f = compute_factor(p, rank, 5);
    EXPECT_TRUE(f == 0.5 || f == 1.5) << f;
    EXPECT_EQ(f, compute_factor(p, rank, 5));  // the same draw every time
  }
}

TEST(PlatformTest, HostsLinksAndSwitch) {
  const std::string xml = platform_xml({.hosts = 8, .bandwidth_Bps = 125e6, .latency_s = 50e-6});
  EXPECT_NE(xml.find("radical=\"0-7\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("bw=\"125000000Bps\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("lat=\"2.5000000000000001e-05s\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("SPLITDUPLEX"), std::string::npos);
  EXPECT_NE(xml.find("FATPIPE"), std::string::npos);
  EXPECT_NE(platform_xml({.hosts = 2, .bandwidth_Bps = 1e9, .switch_Bps = 2e9}).find("SHARED"),
            std::string::npos);
  EXPECT_THROW(platform_xml({.hosts = 2, .bandwidth_Bps = 0}), Error);
  EXPECT_EQ(hostfile_text(3), "h0\nh1\nh2\n");
}

// A fused all-reduce of 108 MiB over a gige switch: SimGrid against
// 2 (N - 1) / N x S / bandwidth. SMPI's TCP model gives a large message about
// 90% of a link's rate (its bandwidth factors, calibrated on real Ethernet
// clusters), so SimGrid reads 0-15% above the formula (measured 11.6% at 2
// and 8 hosts with SimGrid 3.32); its MPI_Allreduce with lr (a ring) and the
// replay's own ring agree to 1%.
class SimulationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = simgrid_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  }
};

StepProfile allreduce_only(int64_t bytes, Collective collective) {
  StepProfile p;
  p.forward_s = 0.01;
  p.bucket_bytes = {bytes};
  p.collective = collective;
  return p;
}

TEST_F(SimulationTest, RingAllReduceAgainstTheFormula) {
  constexpr double kBytes = 108.0 * 1024 * 1024, kBandwidth = 125e6;
  for (int hosts : {2, 8}) {
    const SimulatedRun run =
        simulate(allreduce_only(static_cast<int64_t>(kBytes), Collective::kRing),
                 {.hosts = hosts, .bandwidth_Bps = kBandwidth});
    const double formula = 2.0 * (hosts - 1) / hosts * kBytes / kBandwidth;
    EXPECT_GE(run.median_comm_s(), formula) << hosts;
    EXPECT_LE(run.median_comm_s(), 1.15 * formula) << hosts;
    EXPECT_NEAR(run.median_step_s(), run.median_comm_s() + 0.01, 1e-6) << hosts;
  }
}

TEST_F(SimulationTest, MpiAllreduceLrIsTheSameRing) {
  constexpr int64_t kBytes = 16 << 20;  // SMPI's own algorithms allocate it per rank
  for (int hosts : {2, 8}) {
    const Platform platform{.hosts = hosts, .bandwidth_Bps = 125e6, .latency_s = 100e-6};
    const double ring =
        simulate(allreduce_only(kBytes, Collective::kRing), platform).median_comm_s();
    const double mpi = simulate(allreduce_only(kBytes, Collective::kMpi), platform).median_comm_s();
    EXPECT_NEAR(mpi / ring, 1.0, 0.01) << hosts;
  }
}

TEST_F(SimulationTest, OverlapHidesBucketsBehindBackward) {
  StepProfile p = allreduce_only(4 << 20, Collective::kRing);
  p.backward_s = 1.0;
  p.bucket_bytes = {4 << 20, 4 << 20, 4 << 20, 4 << 20};
  const Platform platform{.hosts = 4, .bandwidth_Bps = 125e6};
  const double after = simulate(p, platform).median_step_s();
  p.overlap = true;
  const double overlapped = simulate(p, platform).median_step_s();
  // Each 4 MiB bucket takes ~50 ms, ready every 250 ms: all but the last hidden.
  const double bucket_s = (after - 1.01) / 4;
  EXPECT_NEAR(overlapped, 1.01 + bucket_s, 0.2 * bucket_s);
}

TEST_F(SimulationTest, FailureNamesSmpirun) {
  SimulationOptions o;
  o.allreduce = "no-such-algorithm";
  const std::string what = [&] {
    try {
      simulate(allreduce_only(1 << 20, Collective::kMpi), {.hosts = 2, .bandwidth_Bps = 1e8}, o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(nothing thrown)");
  }();
  EXPECT_NE(what.find("smpirun (2 hosts)"), std::string::npos) << what;
}

}  // namespace
}  // namespace trainscope::simgrid
