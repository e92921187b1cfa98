// F16 and BF16 conversions: exact where the value is representable, round to
// nearest even otherwise, every 16-bit pattern back to itself.
#include "kernels/float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace trainscope::kernels {
namespace {

TEST(Float16Test, RepresentableValuesAreExact) {
  for (float x : {0.0f, 1.0f, -2.5f, 65504.0f, 0x1p-14f, 0x1p-24f, -0x1.ff8p-15f, 1025.0f}) {
    EXPECT_EQ(f16_to_float(float_to_f16(x)), x) << x;
  }
  for (float x : {0.0f, 1.0f, -2.5f, 0x1p-126f, 0x1.fep127f, 1.0078125f}) {
    EXPECT_EQ(bf16_to_float(float_to_bf16(x)), x) << x;
  }
}

TEST(Float16Test, RoundsToNearestEven) {
  // 1 + 2^-11 is half way between 1 and 1 + 2^-10: to the even one, 1.
  EXPECT_EQ(f16_to_float(float_to_f16(1.0f + 0x1p-11f)), 1.0f);
  // 1 + 3 * 2^-11 is half way between 1 + 2^-10 and 1 + 2^-9: to 1 + 2^-9.
  EXPECT_EQ(f16_to_float(float_to_f16(1.0f + 3 * 0x1p-11f)), 1.0f + 0x1p-9f);
  EXPECT_EQ(f16_to_float(float_to_f16(1.0f + 0x1.2p-11f)), 1.0f + 0x1p-10f);  // above half
  // Subnormals: 1.5 * 2^-24 ties to 2 * 2^-24, 2.5 * 2^-24 to 2 * 2^-24.
  EXPECT_EQ(f16_to_float(float_to_f16(1.5f * 0x1p-24f)), 2 * 0x1p-24f);
  EXPECT_EQ(f16_to_float(float_to_f16(2.5f * 0x1p-24f)), 2 * 0x1p-24f);
  EXPECT_EQ(f16_to_float(float_to_f16(0x1p-26f)), 0.0f);
  // The largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(f16_to_float(float_to_f16(0x1.fffp-15f)), 0x1p-14f);
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + 0x1p-8f)), 1.0f);
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + 3 * 0x1p-8f)), 1.0f + 0x1p-6f);
}

TEST(Float16Test, OverflowInfinityAndNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(f16_to_float(float_to_f16(65519.0f)), 65504.0f);
  EXPECT_EQ(f16_to_float(float_to_f16(65520.0f)), inf);
  EXPECT_EQ(f16_to_float(float_to_f16(-1e9f)), -inf);
  EXPECT_TRUE(std::isnan(f16_to_float(float_to_f16(std::nanf("")))));
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  EXPECT_EQ(bf16_to_float(float_to_bf16(inf)), inf);
}

TEST(Float16Test, EveryPatternComesBackToItself) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const bool f16_nan = (bits & 0x7c00) == 0x7c00 && (bits & 0x3ff) != 0;
    if (!f16_nan) {
      ASSERT_EQ(float_to_f16(f16_to_float(bits)), bits) << std::hex << h;
    }
    const bool bf16_nan = (bits & 0x7f80) == 0x7f80 && (bits & 0x7f) != 0;
    if (!bf16_nan) {
      ASSERT_EQ(float_to_bf16(bf16_to_float(bits)), bits) << std::hex << h;
    }
  }
}

}  // namespace
}  // namespace trainscope::kernels
