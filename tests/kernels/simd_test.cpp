// The dispatched vector code of the element-wise float kernels
// (kernels/simd.h): every level this CPU runs against the reference
// templates, the levels with FMA against each other to the bit, the levels
// within TRAINSCOPE_MAX_CPU_ISA's cap, and the AVX2 and AVX-512 code
// vector code in the binary itself.
#include <gtest/gtest.h>

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/adamw.h"
#include "kernels/attention.h"
#include "kernels/cpu_isa.h"
#include "kernels/float16.h"
#include "kernels/matmul_bf16.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/simd.h"
#include "kernels/softmax_xent.h"
#include "kernels/swiglu.h"
#include "tests/kernels/gradcheck.h"
#include "tests/run_command.h"
#include "tests/scoped_env.h"

namespace trainscope::kernels {
namespace {

using Floats = std::vector<float>;
using Outputs = std::map<std::string, Floats>;

Floats randoms(std::size_t n, uint64_t seed, double scale = 1.0) {
  const std::vector<double> d = testing::random_vector(n, seed, scale);
  return Floats(d.begin(), d.end());
}

Floats widened(const std::vector<uint16_t>& bf16) {
  Floats out;
  for (uint16_t h : bf16) out.push_back(bf16_to_float(h));
  return out;
}

// Every dispatched kernel once, at the level in effect, on sizes that leave
// a tail after the last whole vector and the last 16-lane block.
Outputs run_every_kernel() {
  Outputs out;
  {  // softmax-cross-entropy, the gradient in place and rounded to bf16
    const int N = 4, V = 1031;
    const std::vector<int32_t> targets = {5, -1, 1030, 77};
    Floats logits = randoms(N * V, 1, 4.0), scratch = logits;
    std::vector<uint16_t> g16(N * V);
    int64_t predicted = 0;
    const double loss = softmax_xent_forward(logits.data(), targets.data(), N, V, 0.25, &predicted);
    softmax_xent_forward(scratch.data(), targets.data(), N, V, 0.25, &predicted, g16.data());
    out["xent.loss"] = {static_cast<float>(loss)};
    out["xent.grad"] = logits;
    out["xent.grad_bf16"] = widened(g16);
  }
  {  // attention: two 64-row tiles, grouped-query
    const int B = 2, T = 70, NH = 4, NKV = 2, hd = 8, W = (NH + 2 * NKV) * hd;
    const Floats qkv = randoms(B * T * W, 2, 1.5), dout = randoms(B * T * NH * hd, 3);
    Floats y(B * T * NH * hd), lse(B * NH * T), dqkv(B * T * W, 0.0f);
    Floats ws(attention_workspace_size(T, omp_get_max_threads()));
    const float* q = qkv.data();
    attention_forward(y.data(), lse.data(), ws.data(), q, q + NH * hd, q + (NH + NKV) * hd, B, T,
                      NH, NKV, hd, W);
    attention_backward(dqkv.data(), dqkv.data() + NH * hd, dqkv.data() + (NH + NKV) * hd, ws.data(),
                       dout.data(), lse.data(), q, q + NH * hd, q + (NH + NKV) * hd, B, T, NH, NKV,
                       hd, W);
    out["attention.out"] = y;
    out["attention.lse"] = lse;
    out["attention.dqkv"] = dqkv;
  }
  {  // SwiGLU
    const int N = 3, F = 37;
    const Floats gu = randoms(N * 2 * F, 4, 3.0), dy = randoms(N * F, 5);
    Floats y(N * F), dgu = randoms(N * 2 * F, 6);
    swiglu_forward(y.data(), gu.data(), N, F);
    swiglu_backward(dgu.data(), dy.data(), gu.data(), N, F);
    out["swiglu.out"] = y;
    out["swiglu.dgu"] = dgu;
  }
  {  // RMSNorm, with the residual add, and backward
    const int N = 3, C = 37;
    Floats x = randoms(N * C, 7), res = randoms(N * C, 8), w = randoms(C, 9), y(N * C), r(N);
    rmsnorm_forward(y.data(), r.data(), x.data(), w.data(), N, C, 1e-5f);
    out["rmsnorm.out"] = y;
    out["rmsnorm.rstd"] = r;
    add_rmsnorm_forward(x.data(), y.data(), r.data(), res.data(), w.data(), N, C, 1e-5f);
    out["add_rmsnorm.x"] = x;
    out["add_rmsnorm.out"] = y;
    Floats dx = randoms(N * C, 10), dw = randoms(C, 11);
    const Floats dy = randoms(N * C, 12);
    rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), r.data(), N, C);
    out["rmsnorm.dx"] = dx;
    out["rmsnorm.dw"] = dw;
  }
  {  // RoPE: head dims 10, so half a head (5) is no whole vector
    const int B = 2, T = 3, NH = 3, hd = 10, ld = NH * hd + 2;
    Floats cs(T * hd / 2), sn(T * hd / 2), x = randoms(B * T * ld, 13);
    rope_tables(cs.data(), sn.data(), T, hd, 10000.0f);
    rope_forward(x.data(), cs.data(), sn.data(), B, T, NH, hd, ld);
    out["rope.forward"] = x;
    rope_backward(x.data(), cs.data(), sn.data(), B, T, NH, hd, ld);
    out["rope.backward"] = x;
  }
  {  // AdamW with a clip scale, the global norm, bf16 rounding
    const std::size_t n = 5003;
    Floats p = randoms(n, 14), g = randoms(n, 15), m = randoms(n, 16), v = randoms(n, 17);
    for (float& e : v) e = std::abs(e);
    adamw_update(p.data(), g.data(), m.data(), v.data(), n, AdamWParams{}, 3, 0.5f);
    out["adamw.p"] = p;
    out["adamw.m"] = m;
    out["adamw.v"] = v;
    out["global_norm"] = {static_cast<float>(global_norm(g.data(), n))};
    std::vector<uint16_t> h(n);
    to_bf16(h.data(), g.data(), static_cast<int64_t>(n));
    out["to_bf16"] = widened(h);
  }
  return out;
}

Outputs at_level(SimdLevel level) {
  const ScopedSimdLevel scope(level);
  return run_every_kernel();
}

// |a - b| within tol of the larger magnitude (1 below that), NaN equal to NaN.
void expect_close(const Outputs& got, const Outputs& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, w] : want) {
    const Floats& g = got.at(name);
    ASSERT_EQ(g.size(), w.size()) << name;
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (std::isnan(w[i]) && std::isnan(g[i])) continue;
      const double scale = std::max({1.0, std::abs(double{w[i]}), std::abs(double{g[i]})});
      ASSERT_LE(std::abs(double{g[i]} - w[i]), tol * scale)
          << what << ": " << name << "[" << i << "] " << g[i] << " vs " << w[i];
    }
  }
}

TEST(SimdTest, EveryLevelComputesWhatTheReferenceComputes) {
  const Outputs reference = at_level(kReferenceLevel);
  for (const SimdLevel& level : simd_levels()) {
    // bf16 outputs may round the other way where fp32 differs in the last
    // bit: 2^-8 relative is one bf16 step.
    expect_close(at_level(level), reference, 1e-5, level.name() + " vs reference");
  }
}

// AVX2 and AVX-512 both have FMA: the same operations in the same lanes
// (kernels/simd_math-inl.h), so the same bits; hosts of either kind compute
// the same clipping norm and, from the same gradients, the same weights.
TEST(SimdTest, LevelsWithFmaAgreeToTheBit) {
  std::vector<SimdLevel> fma;
  for (const SimdLevel& l : simd_levels()) {
    if (l.name() == "AVX2" || l.name().starts_with("AVX3")) fma.push_back(l);
  }
  if (fma.size() < 2) {
    GTEST_SKIP() << "skipped: this CPU runs fewer than two levels with FMA here (" << simd_summary()
                 << ")";
  }
  const Outputs first = at_level(fma[0]);
  for (std::size_t i = 1; i < fma.size(); ++i) {
    const Outputs other = at_level(fma[i]);
    for (const auto& [name, values] : first) {
      EXPECT_EQ(std::memcmp(values.data(), other.at(name).data(), values.size() * sizeof(float)), 0)
          << name << ": " << fma[0].name() << " and " << fma[i].name() << " differ";
    }
  }
}

// Rounding to bf16 is integer arithmetic: every level equals float_to_bf16
// on the cases that matter (ties both ways, NaN, infinities, denormals).
TEST(SimdTest, Bf16RoundingIsFloatToBf16OnEveryLevel) {
  const float inf = std::numeric_limits<float>::infinity();
  Floats x = {1.0f,
              1.00390625f,
              1.01171875f,
              -2.5f,
              0.0f,
              -0.0f,
              inf,
              -inf,
              std::numeric_limits<float>::quiet_NaN(),
              std::numeric_limits<float>::denorm_min(),
              3.4028235e38f,
              1.1754942e-38f,
              65504.0f};
  for (uint32_t bits = 0x3f800000; x.size() < 100; bits += 0x7fff) {
    x.push_back(std::bit_cast<float>(bits));
  }
  for (const SimdLevel& level : simd_levels()) {
    const ScopedSimdLevel scope(level);
    std::vector<uint16_t> got(x.size());
    to_bf16(got.data(), x.data(), static_cast<int64_t>(x.size()));
    for (std::size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(got[i], float_to_bf16(x[i])) << level.name() << " at " << x[i];
    }
  }
}

// Dispatch chooses what the ISA probe (capped by TRAINSCOPE_MAX_CPU_ISA)
// says the CPU runs: AVX-512 code only at avx512_core and above, AVX2 code
// only with AVX2; the strongest such level first.
TEST(SimdTest, LevelsFollowTheIsaProbe) {
  const CpuIsa isa = detect_cpu_isa();
  const std::vector<SimdLevel> levels = simd_levels();
  ASSERT_FALSE(levels.empty());
  std::set<std::string> names;
  for (const SimdLevel& l : levels) names.insert(l.name());
  const bool avx512 = isa.level() >= IsaLevel::kAvx512Core;
  EXPECT_EQ(names.contains("AVX3"), avx512) << simd_summary() << "; probe: " << isa.summary();
  EXPECT_EQ(names.contains("AVX2"), isa.avx2 && isa.fma) << simd_summary();
  EXPECT_EQ(levels.front().name(), avx512 ? "AVX3" : isa.avx2 ? "AVX2" : levels.front().name());
  EXPECT_EQ(simd_level(), levels.front());
}

// A cap set before the process starts holds for the whole process: a
// fresh process (the test binary again) capped at avx2 runs AVX2 code.
TEST(SimdDeathTest, CapAtAvx2RunsTheAvx2Code) {
  if (!detect_cpu_isa().avx2) {
    GTEST_SKIP() << "skipped: " << detect_cpu_isa().summary() << " has no AVX2";
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const testing::ScopedEnv cap("TRAINSCOPE_MAX_CPU_ISA", "avx2");
  EXPECT_EXIT(
      {
        const bool ok = simd_level().name() == "AVX2" &&
                        simd_summary().find("capped at avx2") != std::string::npos;
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// The binary's own code: each function Highway compiled for AVX2 (one per
// dispatch table) must use ymm registers and each AVX-512 one zmm, and none
// may call a library exp: what GCC 12 made of the kernels' loops on AVX2
// CPUs before (no ymm instruction in swiglu.cpp at all).
TEST(SimdTest, EveryKernelsAvx2AndAvx512CodeIsVectorCode) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "skipped: not x86-64, no AVX2 or AVX-512 code to look at";
#endif
  const testing::CommandResult version = testing::run_shell("objdump --version");
  if (version.exit_code != 0) GTEST_SKIP() << "skipped: objdump (binutils) is not installed";
  const testing::CommandResult symbols =
      testing::run_shell("objdump -t -C /proc/" + std::to_string(::getpid()) + "/exe");
  std::set<std::string> kernels;  // from the dispatch tables' names
  const std::regex table(R"(trainscope::kernels::(\w+)HighwayDispatchTable)");
  for (std::sregex_iterator it(symbols.output.begin(), symbols.output.end(), table), end; it != end;
       ++it) {
    kernels.insert((*it)[1]);
  }
  if (kernels.empty()) GTEST_SKIP() << "skipped: the binary has no symbol table (stripped)";
  const testing::CommandResult code = testing::run_shell("objdump -d -C --no-show-raw-insn /proc/" +
                                                         std::to_string(::getpid()) + "/exe");
  struct Body {
    int ymm = 0, zmm = 0, exp_calls = 0;
  };
  std::map<std::string, Body> bodies;  // "N_AVX2::SwigluForwardRows"
  const std::regex start(R"(^[0-9a-f]+ <trainscope::kernels::(N_\w+::\w+)\(.*>:$)");
  std::istringstream lines(code.output);
  std::string line, current;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (line.empty() || line.ends_with(">:")) {  // a function's first line
      current = std::regex_match(line, m, start) ? m[1].str() : std::string();
    } else if (!current.empty()) {
      Body& b = bodies[current];
      b.ymm += line.find("%ymm") != std::string::npos;
      b.zmm += line.find("%zmm") != std::string::npos;
      b.exp_calls +=
          line.find("call") != std::string::npos && line.find("exp") != std::string::npos;
    }
  }
  for (const std::string& k : kernels) {
    const Body avx2 = bodies["N_AVX2::" + k], avx3 = bodies["N_AVX3::" + k];
    EXPECT_GT(avx2.ymm, 0) << k << ": its AVX2 code has no ymm instruction";
    EXPECT_GT(avx3.zmm, 0) << k << ": its AVX-512 code has no zmm instruction";
    EXPECT_EQ(avx2.exp_calls + avx3.exp_calls, 0) << k << " calls a library exp";
  }
  EXPECT_GE(kernels.size(), 16u) << "kernels/simd_kernels.h has 16 dispatched functions";
}

}  // namespace
}  // namespace trainscope::kernels
