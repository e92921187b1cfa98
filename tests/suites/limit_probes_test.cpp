// The sgemm probe on several CPUs at once (suites/limit_probes.h): its
// copies run side by side, not one after another, and the limit it makes
// says how many ran.
#include "suites/limit_probes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "suites/cpus.h"
#include "training/model_config.h"

namespace trainscope::suites {
namespace {

// About 1 GFLOP a call: each call spans many of the scheduler's slices.
const GemmShape kShape{.rows = 256, .in = 512, .out = 4096};

// Two copies pinned to one CPU must each get about half of it. Had they run
// in turn (or one process's GEMMs been serialised), each would show the rate
// of one alone. The VM's CPU is shared with other tenants, so one rate alone
// beside one rate shared can differ by chance: a round's ratio was seen from
// 0.30 to 0.91 (median 0.48), and CI once failed on one round's 0.79. So
// rounds of the two side by side, and the median of their ratios decides.
TEST(SgemmAtOnceTest, TwoCopiesOnOneCpuShareIt) {
  const int cpu = allowed_cpus().front();
  const std::vector<GemmShape> shapes{kShape};
  std::vector<double> ratios;
  std::string rounds;
  for (int round = 0; round < 7; ++round) {
    const double alone = sgemm_gflops_at_once(shapes, std::vector{cpu});
    const double shared = sgemm_gflops_at_once(shapes, std::vector{cpu, cpu});
    ASSERT_GT(alone, 0);
    ratios.push_back(shared / alone);
    rounds += fmt::format(" {:.1f}/{:.1f}", shared, alone);
  }
  std::sort(ratios.begin(), ratios.end());
  const double median = ratios[ratios.size() / 2];
  EXPECT_LT(median, 0.8) << "each of two / alone, GFLOP/s:" << rounds;
  EXPECT_GT(median, 0.2) << "each of two / alone, GFLOP/s:" << rounds;
}

TEST(SgemmAtOnceTest, TheLimitNamesItsCopiesAndCpus) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "one CPU here: nothing to run at once";
  const std::vector<int> two{cpus[0], cpus[1]};
  const results::MachineLimit l =
      sgemm_at_once_limit("tiny", training::model_preset("tiny"), 62, two, "test");
  EXPECT_EQ(l.kind, results::LimitKind::kSgemm);
  EXPECT_EQ(l.ranks, 2);
  EXPECT_EQ(l.threads, 1);
  EXPECT_EQ(l.rows, 62);
  EXPECT_GT(l.value, 0);
  EXPECT_NE(l.detail.find(fmt::format("CPUs {},{} at once", cpus[0], cpus[1])), std::string::npos)
      << l.detail;
  EXPECT_EQ(results::describe_key(l), "sgemm, tiny, 62 rows, 1 thread, --gemm openblas, 2 at once");
}

// A limit is of the library the case's ranks run its GEMMs on (--gemm):
// forced, each probe (and each forked copy) runs on it and the detail says
// which.
TEST(SgemmLimitTest, TheLimitIsOfTheLibraryTheCaseRuns) {
  const auto tiny = training::model_preset("tiny");
  const results::MachineLimit blas = sgemm_limit(
      "tiny", tiny, 62, 1, "test", options::Precision::kFp32, options::GemmBackend::kOpenBlas);
  const results::MachineLimit dnnl = sgemm_limit(
      "tiny", tiny, 62, 1, "test", options::Precision::kFp32, options::GemmBackend::kOneDnn);
  EXPECT_EQ(blas.detail.rfind("OpenBLAS", 0), 0u) << blas.detail;
  EXPECT_EQ(dnnl.detail.rfind("oneDNN", 0), 0u) << dnnl.detail;
  EXPECT_EQ(blas.gemm, "openblas") << "--gemm is part of the limit's key";
  EXPECT_EQ(dnnl.gemm, "onednn");
  EXPECT_EQ(results::describe_key(dnnl), "sgemm, tiny, 62 rows, 1 thread, --gemm onednn");
  EXPECT_GT(dnnl.value, 0);
  const int cpu = allowed_cpus().front();
  const std::vector<GemmShape> shapes{kShape};
  EXPECT_GT(sgemm_gflops_at_once(shapes, std::vector{cpu, cpu}, options::GemmBackend::kOneDnn), 0)
      << "oneDNN in forked copies";
}

}  // namespace
}  // namespace trainscope::suites
