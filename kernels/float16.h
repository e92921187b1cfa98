// IEEE half (F16) and bfloat16 (BF16) to and from float, bit by bit: the
// dtypes Hugging Face checkpoints store. Conversions to float are exact;
// from float they round to nearest, ties to even (as PyTorch's .half() and
// .bfloat16() do), keep infinities, and keep NaN a NaN. No ISA extension is
// assumed (F16C and AVX512-BF16 are not everywhere this runs).
#ifndef TRAINSCOPE_KERNELS_FLOAT16_H_
#define TRAINSCOPE_KERNELS_FLOAT16_H_

#include <bit>
#include <cstdint>

namespace trainscope::kernels {

inline float bf16_to_float(uint16_t h) { return std::bit_cast<float>(uint32_t{h} << 16); }

inline uint16_t float_to_bf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// a + b for bf16 values: added in fp32, the sum rounded once (--comm-dtype
// bf16's reductions).
inline uint16_t bf16_add(uint16_t a, uint16_t b) {
  return float_to_bf16(bf16_to_float(a) + bf16_to_float(b));
}

inline float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf, NaN
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  // Zero or subnormal: mant x 2^-24, exact in float.
  const float magnitude = static_cast<float>(mant) * 0x1p-24f;
  return sign != 0 ? -magnitude : magnitude;
}

inline uint16_t float_to_f16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {                        // below 2^-14: subnormal or 0
    // The float's value in units of 2^-24, rounded to nearest even.
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(abs >> 23);  // 14..
    if (shift > 24) return sign;
    const uint32_t kept = mant >> shift, rest = mant & ((1u << shift) - 1),
                   half = 1u << (shift - 1);
    return sign | static_cast<uint16_t>(kept + (rest > half || (rest == half && (kept & 1u))));
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits.
  const uint32_t rebased = abs - (112u << 23);
  return sign | static_cast<uint16_t>((rebased + 0xfffu + ((rebased >> 13) & 1u)) >> 13);
}

}  // namespace trainscope::kernels

#endif  // TRAINSCOPE_KERNELS_FLOAT16_H_
