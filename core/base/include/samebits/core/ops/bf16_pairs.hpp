// The bf16 pair order (numerics.bf16_dot = pairs; docs/CONTRACT.md), host and device, one
// definition: what AVX512-BF16's vdpbf16ps computes in one fp32 lane (Intel SDM: the odd product,
// then the even one, each added in one fused step rounded to nearest even; bf16 subnormal inputs
// read as zero; a result that is tiny after rounding to 24 bits flushed to the zero of its sign;
// MXCSR ignored). bf16_pair_step is that step from fma_f32 and bit operations (measured on an AMD
// Zen 4 against the instruction: selftest and tests/unit/test_bf16_pairs.cpp); NaN bits are outside
// the contract (rule 12).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "samebits/det/fp_formats.hpp"
#include "samebits/det/hd.hpp"

namespace sb::ops {

// A bf16 operand as the instruction reads it: x rounded to bf16 (RNE), a subnormal as ±0 (DAZ);
// its 16 bits.
SB_HD uint16_t bf16_pair_operand(float x) {
  const uint16_t b = det::bf16_bits_from_f32(x);
  return (b & 0x7f80u) == 0 ? static_cast<uint16_t>(b & 0x8000u) : b;
}

// The odd slot of the last pair when k is odd: −0 in A and +0 in B, a product of −0 that leaves
// every accumulator as it is (x + (−0) = x for every x, ±0 included).
constexpr uint16_t kBf16PadA = 0x8000u, kBf16PadB = 0x0000u;

// An fp32 value as the instruction leaves it: a subnormal as the zero of its sign (FTZ). Also the
// start of a continued chain (C's value read under DAZ).
SB_HD float bf16_pair_flush(float x) {
  const uint32_t u = det::bits_of(x);
  return (u & 0x7f800000u) == 0 ? det::float_of_bits(u & 0x80000000u) : x;
}

// One fused step acc + a·b (a, b bf16 values, acc normal or zero): the exact value rounded to 24
// bits with an unbounded exponent, then flushed to ±0 when below 2^-126 in magnitude. fma_f32's
// gradual underflow gives the same bits except when it returns ±2^-126 itself: then the exact
// value may lie in [2^-126 − 2^-150, 2^-126 − 2^-151), which the instruction rounds to 24 bits
// as 2^-126 − 2^-150 and flushes. In that case every term is tiny (a product with bits below
// 2^-149 has |a·b| < 2^-133, so |acc| < 2^-125), and the same fma scaled by 2^64 rounds in the
// normal range without overflow: it decides.
SB_HD float bf16_pair_step(float acc, float a, float b) {
  constexpr float kMin = 0x1p-126f, kScale = 0x1p64f;
  const float r = det::fma_f32(a, b, acc);
  const uint32_t mag = det::bits_of(r) & 0x7fffffffu;
  if (mag > 0x00800000u) return r;
  if (mag < 0x00800000u) return bf16_pair_flush(r);
  const float scaled = det::fma_f32(a * kScale, b, acc * kScale);
  return scaled < kMin * kScale && scaled > -kMin * kScale ? det::float_of_bits(det::bits_of(r) & 0x80000000u) : r;
}

// One pair of k: the odd product, then the even one (bf16 bits of bf16_pair_operand, or the pad).
SB_HD float bf16_pair_fma(float acc, uint16_t a_odd, uint16_t b_odd, uint16_t a_even, uint16_t b_even) {
  acc = bf16_pair_step(acc, det::f32_from_bf16_bits(a_odd), det::f32_from_bf16_bits(b_odd));
  return bf16_pair_step(acc, det::f32_from_bf16_bits(a_even), det::f32_from_bf16_bits(b_even));
}

// The dot of a[p·sa] and b[p·sb] over p = 0 … k−1 in the pair order, from acc (+0 for a fresh dot,
// C's value for a continued one, read flushed): pair j holds p = 2j (even) and 2j + 1 (odd).
SB_HD float bf16_pair_dot(const float* a, ptrdiff_t sa, const float* b, ptrdiff_t sb, int k, float acc) {
  acc = bf16_pair_flush(acc);
  for (int p = 0; p < k; p += 2) {
    const bool pad = p + 1 == k;
    const uint16_t a_odd = pad ? kBf16PadA : bf16_pair_operand(a[(p + 1) * sa]);
    const uint16_t b_odd = pad ? kBf16PadB : bf16_pair_operand(b[(p + 1) * sb]);
    acc = bf16_pair_fma(acc, a_odd, b_odd, bf16_pair_operand(a[p * sa]), bf16_pair_operand(b[p * sb]));
  }
  return acc;
}

}  // namespace sb::ops
