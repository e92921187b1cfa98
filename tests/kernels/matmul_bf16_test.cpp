// The bf16 GEMMs (kernels/matmul_bf16.h) on each path: oneDNN where this
// CPU's oneDNN has a bf16 matmul (skipped with the reason elsewhere) and the
// emulation on every CPU, wide outputs whole and in column chunks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/float16.h"
#include "kernels/matmul.h"
#include "kernels/matmul_bf16.h"
#include "tests/cpu_paths.h"
#include "tests/kernels/gradcheck.h"

namespace trainscope::kernels {
namespace {

using testing::random_vector;
using Vec = std::vector<double>;

class MatmulBf16Test : public ::testing::TestWithParam<testing::Bf16Path> {
 protected:
  void SetUp() override { TRAINSCOPE_SKIP_UNLESS_BF16_PATH_RUNS(GetParam().options); }

  testing::ScopedBf16Path path_{GetParam().options};
};

// bf16 inputs, fp32 sums: exact products of the rounded inputs summed in
// fp32 (to fp32's precision), and within bf16's rounding of the fp32 GEMM.
void expect_bf16_forward_matches(int N, int C, int OC) {
  std::vector<float> x(N * C), w(int64_t{OC} * C), exact(int64_t{N} * OC), y(int64_t{N} * OC);
  const Vec xr = random_vector(N * C, 4), wr = random_vector(int64_t{OC} * C, 5);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(xr[i]);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(wr[i]);
  std::vector<uint16_t> xb(x.size()), wb(w.size());
  to_bf16(xb.data(), x.data(), std::ssize(x));
  to_bf16(wb.data(), w.data(), std::ssize(w));
  matmul_forward_bf16(y.data(), xb.data(), wb.data(), N, C, OC);
  matmul_forward(exact.data(), x.data(), w.data(), N, C, OC);
  double worst_rounded = 0, worst_fp32 = 0;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t o = 0; o < OC; ++o) {
      double want = 0, scale = 0;
      for (int64_t c = 0; c < C; ++c) {
        const double p = double(bf16_to_float(xb[n * C + c])) * bf16_to_float(wb[o * C + c]);
        want += p;
        scale += std::abs(p);
      }
      const float got = y[n * OC + o];
      worst_rounded = std::max(worst_rounded, std::abs(got - want) / scale);
      worst_fp32 = std::max(worst_fp32, std::abs(got - double(exact[n * OC + o])) / scale);
    }
  }
  EXPECT_LT(worst_rounded, 1e-5) << "fp32 accumulation of the bf16 products, OC " << OC;
  EXPECT_LT(worst_fp32, 1.0 / 128) << "two bf16 roundings (2^-8 each) of every product";
  EXPECT_GT(worst_fp32, 1e-6) << "the inputs were rounded to bf16";
}

TEST_P(MatmulBf16Test, MatchesTheFp32GemmWithinBf16Precision) {
  expect_bf16_forward_matches(33, 256, 70);
}

// Wider than a column chunk, with a partial last chunk: the LM head's path.
TEST_P(MatmulBf16Test, WideOutputMatchesTheFp32GemmWithinBf16Precision) {
  expect_bf16_forward_matches(7, 24, 2 * kBf16ColumnChunk + 37);
}

// The backward GEMMs (one with a transposed operand) accumulate onto what the
// gradients held, summing the bf16-rounded products in fp32.
void expect_bf16_backward_accumulates(int N, int C, int OC) {
  auto rounded = [](int64_t n, uint64_t seed, std::vector<uint16_t>& bits) {
    const Vec v = random_vector(n, seed);
    std::vector<float> f(v.begin(), v.end());
    bits.resize(n);
    to_bf16(bits.data(), f.data(), n);
    Vec back(n);
    for (int64_t i = 0; i < n; ++i) back[i] = bf16_to_float(bits[i]);
    return back;
  };
  const int64_t NC = int64_t{N} * C, OCC = int64_t{OC} * C;
  std::vector<uint16_t> xb, wb, gb;
  const Vec x = rounded(NC, 7, xb), w = rounded(OCC, 8, wb), g = rounded(int64_t{N} * OC, 9, gb);
  Vec dx_want(NC, 0.5), dw_want(OCC, -0.25);  // what the gradients held before
  matmul_backward_reference(dx_want.data(), dw_want.data(), g.data(), x.data(), w.data(), N, C, OC);
  std::vector<float> dx(NC, 0.5f), dw(OCC, -0.25f);
  matmul_backward_bf16(dx.data(), dw.data(), gb.data(), xb.data(), wb.data(), N, C, OC);
  // fp32 sums: errors of a few fp32 epsilons of the sum of |products| (dinp sums OC of them).
  auto magnitude = [](const Vec& v) {
    Vec m(v.size());
    std::ranges::transform(v, m.begin(), [](double e) { return std::abs(e); });
    return m;
  };
  Vec dx_scale(NC, 1.0), dw_scale(OCC, 1.0);
  matmul_backward_reference(dx_scale.data(), dw_scale.data(), magnitude(g).data(),
                            magnitude(x).data(), magnitude(w).data(), N, C, OC);
  for (int64_t i = 0; i < NC; ++i) {
    ASSERT_NEAR(dx[i], dx_want[i], 1e-6 * dx_scale[i]) << "dinp " << i;
  }
  for (int64_t i = 0; i < OCC; ++i) {
    ASSERT_NEAR(dw[i], dw_want[i], 1e-6 * dw_scale[i]) << "dweight " << i;
  }
  std::vector<float> only_dw(OCC, 0.f);  // a null dinp is skipped
  matmul_backward_bf16(nullptr, only_dw.data(), gb.data(), xb.data(), wb.data(), N, C, OC);
  EXPECT_NEAR(only_dw[3], dw_want[3] + 0.25, 1e-5);
  EXPECT_NEAR(only_dw[OCC - 1], dw_want[OCC - 1] + 0.25, 1e-5);
}

TEST_P(MatmulBf16Test, BackwardAccumulatesTheRoundedProducts) {
  expect_bf16_backward_accumulates(45, 40, 67);
}

TEST_P(MatmulBf16Test, WideOutputBackwardAccumulatesTheRoundedProducts) {
  expect_bf16_backward_accumulates(9, 24, 2 * kBf16ColumnChunk + 37);
}

// The emulation is what it says in records, and the default path is oneDNN.
TEST(MatmulBf16PathTest, TheEmulationIsNamedAndNeverTheDefault) {
  EXPECT_EQ(bf16_gemm_options().gemm, Bf16Gemm::kOneDnn);
  EXPECT_EQ(bf16_gemm_options().columns, Bf16Columns::kAuto);
  EXPECT_EQ(onednn_description().find("emulated"), std::string::npos);
  {
    testing::ScopedBf16Path emulated({Bf16Gemm::kEmulated, Bf16Columns::kChunked});
    EXPECT_NE(onednn_description().find("emulated"), std::string::npos);
  }
  EXPECT_EQ(bf16_gemm_options().gemm, Bf16Gemm::kOneDnn);
}

INSTANTIATE_TEST_SUITE_P(Paths, MatmulBf16Test, ::testing::ValuesIn(testing::bf16_paths()),
                         testing::bf16_path_name);

}  // namespace
}  // namespace trainscope::kernels
