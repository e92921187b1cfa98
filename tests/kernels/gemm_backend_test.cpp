// The fp32 GEMM libraries behind --gemm (kernels/gemm_backend.h): oneDNN and
// OpenBLAS give the same products at every transpose the model uses, the
// matmul kernels give the same results on either, and auto's choice is
// cached per machine and read back without timing again.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/check.h"
#include "kernels/attention.h"
#include "kernels/gemm_backend.h"
#include "kernels/matmul.h"
#include "kernels/thread_count.h"
#include "tests/kernels/gradcheck.h"
#include "tests/scoped_env.h"
#include "tests/temp_dir.h"

namespace trainscope::kernels {
namespace {

std::vector<float> random_floats(int64_t n, int seed) {
  const auto r = testing::random_vector(n, seed);
  return {r.begin(), r.end()};
}

// dst = op(a) @ op(b) in double, as the definition of `key`.
std::vector<double> reference(const GemmKey& k, const std::vector<float>& a,
                              const std::vector<float>& b, const std::vector<float>& dst0) {
  std::vector<double> out(k.M * k.N);
  for (int64_t m = 0; m < k.M; ++m) {
    for (int64_t n = 0; n < k.N; ++n) {
      double s = k.accumulate ? dst0[m * k.N + n] : 0.0;
      for (int64_t i = 0; i < k.K; ++i) {
        const double av = k.a_transposed ? a[i * k.M + m] : a[m * k.K + i];
        const double bv = k.b_transposed ? b[n * k.K + i] : b[i * k.N + n];
        s += av * bv;
      }
      out[m * k.N + n] = s;
    }
  }
  return out;
}

class GemmBackendTest : public ::testing::TestWithParam<GemmKey> {
 protected:
  void TearDown() override {
    set_gemm_backend(GemmBackend::kOpenBlas);
    reset_gemm_choices();
  }
};

TEST_P(GemmBackendTest, EachLibraryComputesTheDefinedProduct) {
  const GemmKey k = GetParam();
  const auto a = random_floats(k.M * k.K, 1), b = random_floats(k.K * k.N, 2),
             dst0 = random_floats(k.M * k.N, 3);
  const auto want = reference(k, a, b, dst0);
  for (GemmBackend lib : {GemmBackend::kOpenBlas, GemmBackend::kOneDnn}) {
    std::vector<float> dst = dst0;
    gemm_f32(lib, k, dst.data(), a.data(), b.data());
    double worst = 0;
    for (size_t i = 0; i < dst.size(); ++i) worst = std::max(worst, std::abs(dst[i] - want[i]));
    EXPECT_LT(worst, 1e-4 * std::sqrt(double(k.K))) << enum_name(lib);
  }
}

// The three GEMMs of a linear layer (forward, input and weight gradients),
// with and without accumulation, at shapes not multiples of a vector.
INSTANTIATE_TEST_SUITE_P(
    Shapes, GemmBackendTest,
    ::testing::Values(GemmKey{37, 53, 29, false, true, false},  // out = inp @ W^T
                      GemmKey{37, 29, 53, false, false, true},  // dinp += dout @ W
                      GemmKey{53, 29, 37, true, false, true},   // dW += dout^T @ inp
                      GemmKey{5, 7, 300, true, true, false}));

TEST(GemmBackend, TheMatmulKernelsAgreeOnEitherLibrary) {
  const int N = 48, C = 40, OC = 72;
  const auto inp = random_floats(N * C, 4), w = random_floats(OC * C, 5),
             dout = random_floats(N * OC, 6);
  std::vector<std::vector<float>> outs, dinps, dws;
  for (GemmBackend lib : {GemmBackend::kOpenBlas, GemmBackend::kOneDnn}) {
    set_gemm_backend(lib);
    std::vector<float> out(N * OC), dinp(N * C, 0.5f), dw(OC * C, 0.25f);
    matmul_forward(out.data(), inp.data(), w.data(), N, C, OC);
    matmul_backward(dinp.data(), dw.data(), dout.data(), inp.data(), w.data(), N, C, OC);
    outs.push_back(out);
    dinps.push_back(dinp);
    dws.push_back(dw);
  }
  set_gemm_backend(GemmBackend::kOpenBlas);
  auto expect_close = [](const std::vector<float>& x, const std::vector<float>& y,
                         const char* what) {
    for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], y[i], 1e-4) << what << " at " << i;
  };
  expect_close(outs[0], outs[1], "forward");
  expect_close(dinps[0], dinps[1], "input gradient (accumulated)");
  expect_close(dws[0], dws[1], "weight gradient (accumulated)");
}

TEST(GemmBackend, AutoTimesAShapeOnceAndReadsItsChoiceFromTheCache) {
  trainscope::testing::TempDir dir;
  setenv("TRAINSCOPE_CACHE_DIR", dir.path().c_str(), 1);
  reset_gemm_choices();
  set_gemm_backend(GemmBackend::kAuto);
  const GemmKey big{256, 512, 256, false, true, false};  // 6.7e7 flops: timed
  const GemmKey small{8, 8, 8, false, true, false};      // not timed: OpenBLAS
  const GemmBackend chosen = backend_for(big);
  EXPECT_EQ(backend_for(small), GemmBackend::kOpenBlas);
  ASSERT_EQ(gemm_choices().size(), 1u) << "only the large shape is timed";
  EXPECT_GT(gemm_choices()[0].openblas_gflops, 0);
  ASSERT_TRUE(std::filesystem::exists(gemm_cache_path()));
  // doctor's line: the cache's shapes per thread count, whatever this process's threads.
  EXPECT_NE(gemm_cache_summary().find(" threads: onednn for "), std::string::npos)
      << gemm_cache_summary();
  EXPECT_NE(gemm_cache_summary().find(" of 1 cached shapes"), std::string::npos)
      << gemm_cache_summary();

  // Another process (here: forgotten choices) reads the file. Plant the
  // other library as the cached choice: it must be taken without timing.
  std::ifstream in(gemm_cache_path());
  auto cache = nlohmann::json::parse(in);
  ASSERT_EQ(cache.size(), 1u) << "one machine key";
  auto& entry = cache.begin().value().begin().value();
  const GemmBackend other =
      chosen == GemmBackend::kOneDnn ? GemmBackend::kOpenBlas : GemmBackend::kOneDnn;
  entry["backend"] = enum_name(other);
  entry["openblas_gflops"] = -1.0;  // marks that the cached figures are the ones reported
  std::ofstream(gemm_cache_path()) << cache.dump();
  reset_gemm_choices();
  EXPECT_EQ(backend_for(big), other);
  EXPECT_EQ(gemm_choices()[0].openblas_gflops, -1.0);
  EXPECT_EQ(gemm_choices_summary(), other == GemmBackend::kOneDnn
                                        ? "auto: onednn for 1 of 1 timed shapes"
                                        : "auto: onednn for 0 of 1 timed shapes");
  unsetenv("TRAINSCOPE_CACHE_DIR");
  reset_gemm_choices();
  set_gemm_backend(GemmBackend::kOpenBlas);
}

// A GEMM run once per thread inside a parallel loop (attention's tiles) runs
// on one thread whatever the rank's count: its choice is timed and cached at
// one thread, apart from the same shape's at the rank's threads, and the
// thread counts are as they were afterwards.
TEST(GemmBackend, AGemmRunPerThreadIsChosenAtOneThread) {
  trainscope::testing::TempDir dir;
  const trainscope::testing::ScopedEnv cache_dir("TRAINSCOPE_CACHE_DIR", dir.path().string());
  reset_gemm_choices();
  set_gemm_backend(GemmBackend::kAuto);
  const ScopedComputeThreads two(2);
  const GemmKey big{256, 512, 256, false, true, false};
  backend_for_one_thread(big, kAutoMinFlops);
  EXPECT_EQ(omp_get_max_threads(), 2);
  EXPECT_EQ(openblas_get_num_threads(), 2);
  backend_for(big);
  ASSERT_EQ(gemm_choices().size(), 2u) << "one choice per thread count";
  EXPECT_EQ(gemm_choices()[0].threads, 1);
  EXPECT_EQ(gemm_choices()[1].threads, 2);
  std::ifstream in(gemm_cache_path());
  const auto cache = nlohmann::json::parse(in);
  std::vector<std::string> keys;
  for (const auto& [key, shapes] : cache.items()) keys.push_back(key.substr(key.rfind('|') + 2));
  EXPECT_EQ(keys, (std::vector<std::string>{"1 threads", "2 threads"}));
  reset_gemm_choices();
  set_gemm_backend(GemmBackend::kOpenBlas);
}

// The scope gives both counts back as they were, even where they differed
// (OpenBLAS's OpenMP build sets OpenMP's count when its own is set).
TEST(ScopedComputeThreadsTest, GivesBothCountsBackAsTheyWere) {
  const ScopedComputeThreads outer(1);
  omp_set_num_threads(3);  // OpenBLAS stays at 1
  ASSERT_EQ(openblas_get_num_threads(), 1);
  {
    const ScopedComputeThreads inner(2);
    EXPECT_EQ(omp_get_max_threads(), 2);
    EXPECT_EQ(openblas_get_num_threads(), 2);
  }
  EXPECT_EQ(omp_get_max_threads(), 3);
  EXPECT_EQ(openblas_get_num_threads(), 1);
}

TEST(GemmBackend, AnUnknownLibraryIsAnErrorNamingWhere) {
  EXPECT_EQ(parse_choice<GemmBackend>("onednn", "--gemm"), GemmBackend::kOneDnn);
  try {
    parse_choice<GemmBackend>("mkl", "suite.toml:4");
    FAIL() << "mkl accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("suite.toml:4"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'mkl'"), std::string::npos) << e.what();
  }
}

// Attention's tile GEMMs run on the library set (--gemm): oneDNN with the
// q/k/v blocks' row strides, the scale on the scores and the accumulated
// gradients gives what OpenBLAS gives, forward and backward, from several
// OpenMP threads at once (each its own stream and scratchpad), at a length
// with a partial last tile and grouped-query heads.
TEST(AttentionOnEachLibraryTest, OneDnnGivesWhatOpenBlasGives) {
  const int B = 2, Tn = 150, NH = 4, NKV = 2, hd = 16;
  const int Q = NH * hd, KV = NKV * hd, ld = Q + 2 * KV;
  const auto qkv = random_floats(int64_t{B} * Tn * ld, 21), dout = random_floats(B * Tn * Q, 22);
  struct Result {
    std::vector<float> out, lse, dqkv;
  };
  auto run = [&](GemmBackend lib) {
    set_gemm_backend(lib);
    Result r{std::vector<float>(B * Tn * Q), std::vector<float>(B * NH * Tn),
             std::vector<float>(int64_t{B} * Tn * ld, 0.0f)};
    std::vector<float> ws(attention_workspace_size(Tn, 64));
    attention_forward(r.out.data(), r.lse.data(), ws.data(), qkv.data(), qkv.data() + Q,
                      qkv.data() + Q + KV, B, Tn, NH, NKV, hd, ld);
    attention_backward(r.dqkv.data(), r.dqkv.data() + Q, r.dqkv.data() + Q + KV, ws.data(),
                       dout.data(), r.lse.data(), qkv.data(), qkv.data() + Q, qkv.data() + Q + KV,
                       B, Tn, NH, NKV, hd, ld);
    set_gemm_backend(GemmBackend::kOpenBlas);
    return r;
  };
  const Result blas = run(GemmBackend::kOpenBlas), dnn = run(GemmBackend::kOneDnn);
  auto expect_close = [](const char* what, const std::vector<float>& a,
                         const std::vector<float>& b) {
    double worst = 0, scale = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      worst = std::max(worst, double(std::abs(a[i] - b[i])));
      scale = std::max(scale, double(std::abs(a[i])));
    }
    EXPECT_GT(scale, 0) << what;
    EXPECT_LT(worst, 1e-4 * scale) << what << ": worst difference " << worst << " of " << scale;
  };
  expect_close("out", blas.out, dnn.out);
  expect_close("lse", blas.lse, dnn.lse);
  expect_close("dqkv", blas.dqkv, dnn.dqkv);
  // The libraries sum in different orders: results equal to the last bit
  // everywhere would say the tiles never reached oneDNN.
  EXPECT_NE(blas.out, dnn.out) << "attention ignored --gemm onednn";
}

}  // namespace
}  // namespace trainscope::kernels
