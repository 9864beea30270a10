// fp32 <-> bf16 and fp32 <-> fp16 conversions, host and device, in integer arithmetic only (so
// the result never depends on the rounding mode, FTZ/DAZ or the compiler). Contract: narrowing is
// IEEE round-to-nearest-even with overflow to ±Inf and gradual underflow to subnormals; widening
// is exact. NaN rule (the x86 F16C rule, applied to both formats and both directions): the result
// is a quiet NaN with the input's sign and the leading payload bits that fit the target format.
#pragma once
#include <stdint.h>

#include "samebits/det/bits.hpp"
#include "samebits/det/hd.hpp"

namespace sb::det {

// bf16: 1 sign, 8 exponent, 7 mantissa bits: the upper half of an fp32.
SB_HD uint16_t bf16_bits_from_f32(float x) {
  const uint32_t u = bits_of(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  // Adding 0x7fff (+1 when the kept part is odd) carries into bit 16 exactly when the dropped
  // half is above one half ulp, or equal to it with an odd kept part; the largest finite values
  // carry into the exponent and give Inf.
  const uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

SB_HD float f32_from_bf16_bits(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  if ((u & 0x7fffffffu) > 0x7f800000u) u |= 0x00400000u;
  return float_of_bits(u);
}

// fp16: 1 sign, 5 exponent (bias 15), 10 mantissa bits; largest finite 65504, smallest
// subnormal 2^-24.
SB_HD uint16_t fp16_bits_from_f32(float x) {
  const uint32_t u = bits_of(x);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a & 0x007fffffu) >> 13));
  // 65520 = 65504 + half an ulp rounds (to even) up to 2^16: Inf, as does everything above.
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (a >= 0x38800000u) {  // |x| >= 2^-14: normal fp16; rebias the exponent, round off 13 bits.
    const uint32_t rebased = a - 0x38000000u;
    return static_cast<uint16_t>(sign | ((rebased + 0x0fffu + ((rebased >> 13) & 1u)) >> 13));
  }
  if (a <= 0x33000000u) return static_cast<uint16_t>(sign);  // |x| <= 2^-25: rounds to ±0.
  // Subnormal fp16: the result is |x| / 2^-24 rounded to an integer (a carry to 0x400 is the
  // smallest normal, correctly encoded). |x| = m · 2^(e-150), so |x| / 2^-24 = m >> (126 - e).
  const uint32_t e = a >> 23;                          // 102 ... 112
  const uint32_t m = (a & 0x007fffffu) | 0x00800000u;  // 24-bit significand
  const uint32_t shift = 126u - e;                     // 14 ... 24
  const uint32_t kept = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  const uint32_t up = (rest > half || (rest == half && (kept & 1u))) ? 1u : 0u;
  return static_cast<uint16_t>(sign | (kept + up));
}

SB_HD float f32_from_fp16_bits(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x03ffu;
  if (e == 0x1fu) {  // Inf, or NaN made quiet
    return float_of_bits(sign | 0x7f800000u | (m << 13) | (m != 0 ? 0x00400000u : 0u));
  }
  if (e == 0) {
    if (m == 0) return float_of_bits(sign);
    // Subnormal m · 2^-24: normalise so the leading one reaches bit 10.
    uint32_t exponent = 113u;  // biased fp32 exponent of 2^-14
    while ((m & 0x0400u) == 0) {
      m <<= 1;
      --exponent;
    }
    return float_of_bits(sign | (exponent << 23) | ((m & 0x03ffu) << 13));
  }
  return float_of_bits(sign | ((e + 112u) << 23) | (m << 13));
}

// The value rounded to bf16 / fp16 precision and range, returned as fp32.
SB_HD float round_to_bf16(float x) { return f32_from_bf16_bits(bf16_bits_from_f32(x)); }
SB_HD float round_to_fp16(float x) { return f32_from_fp16_bits(fp16_bits_from_f32(x)); }

// Storage types: the encoding only; arithmetic is always done in fp32.
struct bf16 {
  uint16_t bits;
  static SB_HD bf16 from_f32(float x) { return bf16{bf16_bits_from_f32(x)}; }
  SB_HD float to_f32() const { return f32_from_bf16_bits(bits); }
};

struct fp16 {
  uint16_t bits;
  static SB_HD fp16 from_f32(float x) { return fp16{fp16_bits_from_f32(x)}; }
  SB_HD float to_f32() const { return f32_from_fp16_bits(bits); }
};

static_assert(sizeof(bf16) == 2 && sizeof(fp16) == 2, "bf16 and fp16 are 2-byte encodings");

}  // namespace sb::det
