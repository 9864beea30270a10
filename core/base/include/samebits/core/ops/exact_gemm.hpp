// The exact GEMM of docs/CONTRACT.md (numerics.gemm = exact), host and device, one definition:
// every operand is a signed integer of 6·s bits times a power-of-two scale per row of op(A) and per
// column of op(B); C = the exact integer dot product times the two scales, rounded once to fp32.
// Integer addition has one answer, so any kernel, blocking, k-split or thread count gives these bits.
#pragma once
#include <cstddef>
#include <cstdint>

#include "samebits/core/numerics.hpp"
#include "samebits/det/bits.hpp"
#include "samebits/det/hd.hpp"

namespace sb::ops::exact {

// The definition's integer operands have 6·s bits. A kernel cuts each into digits of equal width
// with the operand's sign (Digits). With the int8 digits of 6 bits (|digit| ≤ 63, a signed 7-bit
// value) a digit product is at most 63², so an int32 dot of digits is exact while k·63² < 2³¹: the
// definition's bound k ≤ kMaxK, whatever digits a kernel uses.
constexpr int kDigitBits = 6;
constexpr int kDigitMax = (1 << kDigitBits) - 1;
constexpr int64_t kMaxK = (int64_t{1} << 31) / (kDigitMax * kDigitMax);  // 541 064 (k·3969 < 2³¹)

// Slices per operand for the GEMM precision: 6·s bits cover the significand of the largest
// magnitude of a row (fp32: 24 bits, bf16: 8, fp16: 11).
SB_HD constexpr int slices(Precision p) { return p == Precision::fp32 ? 4 : 2; }

SB_HD bool is_finite(float x) { return (det::bits_of(x) & 0x7f800000u) != 0x7f800000u; }

// The scale exponent of a row of op(A) or a column of op(B) from its largest finite magnitude m:
// the least E with m < 2^E (0 when m = 0).
SB_HD int scale_exponent(float max_abs) {
  const uint32_t u = det::bits_of(max_abs) & 0x7fffffffu;
  if (u == 0) return 0;
  const int biased = static_cast<int>(u >> 23);
  if (biased != 0) return biased - 126;  // m in [2^(b−127), 2^(b−126))
  int top = 22;                          // a subnormal m = mant·2^−149, top bit `top`
  while (((u >> top) & 1u) == 0) --top;
  return top - 148;
}

// A line's scale code, what a k-split reduces: the bits of its largest finite magnitude (a
// non-negative int32 ordered as the magnitudes), or kNonfiniteCode when it holds a NaN or an Inf.
// The code of a line cut into parts is the max of the parts' codes, so ranks holding k-slices of
// a product agree on its scales by a max over the group.
constexpr int32_t kNonfiniteCode = 0x7fffffff;
SB_HD int32_t line_code(float max_abs, bool nonfinite) {
  return nonfinite ? kNonfiniteCode : static_cast<int32_t>(det::bits_of(max_abs) & 0x7fffffffu);
}
SB_HD bool code_nonfinite(int32_t code) { return code == kNonfiniteCode; }
SB_HD int code_exponent(int32_t code) {
  return code_nonfinite(code) ? 0 : scale_exponent(det::float_of_bits(static_cast<uint32_t>(code)));
}

// The integer operand of x (finite, |x| < 2^E) under scale exponent E: sign(x)·trunc(|x|·2^(6s−E)),
// so |X| < 2^(6s) ≤ 2^24. Bits of x below 2^(E−6s) are dropped (truncation toward zero). In 32-bit
// lanes without branches: |x| < 2^E keeps a left shift below 2^24, and a right shift of 32 or more
// leaves 0. (A line holding a NaN or an Inf has E = 0 and unused digits: any shift stays defined.)
SB_HD int32_t integer_operand(float x, int E, int s) {
  const uint32_t u = det::bits_of(x);
  const uint32_t biased = (u >> 23) & 0xffu;
  const uint32_t mant = (u & 0x7fffffu) | (biased != 0 ? 0x800000u : 0u);                   // |x| = mant·2^ex
  const int shift = static_cast<int>(biased != 0 ? biased : 1) - 150 + kDigitBits * s - E;  // ex + 6s − E
  const uint32_t mag = shift >= 32 || shift <= -32 ? 0u : shift >= 0 ? mant << shift : mant >> -shift;
  return static_cast<int32_t>((u >> 31) != 0 ? 0u - mag : mag);
}

// How a kernel cuts the 6s-bit integer operands: `count` digits of `bits` magnitude bits each
// (count·bits = 6s), X = Σ_t digit_t·2^(bits·(count−1−t)), digit 0 the most significant.
struct Digits {
  int count, bits;
  SB_HD constexpr int max() const { return (1 << bits) - 1; }
  // The digit pairs (t, u) of one weight v = t + u, v in [0, weights()).
  SB_HD constexpr int weights() const { return 2 * count - 1; }
  // The weight of a pair (t, u) with t + u = v in the integer dot: Σ_p X·Y = Σ_v 2^shift(v)·D_v.
  SB_HD constexpr int shift(int v) const { return bits * (2 * count - 2 - v); }
};
// s int8 digits of 6 bits (the int8 products of oneDNN and the tensor cores), or s/2 int16 digits of
// 12 bits (s is 2 or 4; samebits' CPU kernels).
SB_HD constexpr Digits int8_digits(int s) { return {s, kDigitBits}; }
SB_HD constexpr Digits int16_digits(int s) { return {s / 2, 2 * kDigitBits}; }

// Digit t of the integer operand X: sign(X)·((|X| >> bits·(count−1−t)) mod 2^bits).
SB_HD int digit(int32_t X, int t, Digits d) {
  const uint32_t mag = X < 0 ? 0u - static_cast<uint32_t>(X) : static_cast<uint32_t>(X);
  const int v = static_cast<int>((mag >> (d.bits * (d.count - 1 - t))) & static_cast<uint32_t>(d.max()));
  return X < 0 ? -v : v;
}

// Index of the highest set bit of u > 0.
SB_HD int top_bit64(uint64_t u) {
  int h = 0;
  for (int w = 32; w >= 1; w /= 2)
    if ((u >> (h + w)) != 0) h += w;
  return h;
}
SB_HD int top_bit(unsigned __int128 u) {
  const uint64_t high = static_cast<uint64_t>(u >> 64);
  return high != 0 ? 64 + top_bit64(high) : top_bit64(static_cast<uint64_t>(u));
}

// 2^e as a float for e in [−149, 127].
SB_HD float pow2(int e) {
  return e >= -126 ? det::float_of_bits(static_cast<uint32_t>(e + 127) << 23) : det::float_of_bits(1u << (e + 149));
}

// S·2^q rounded once to fp32, to nearest with ties to even, subnormals kept, overflow to ±Inf; +0
// for S = 0 — in integer arithmetic.
SB_HD float round_scaled_bits(__int128 S, int q) {
  if (S == 0) return 0.0f;
  const bool negative = S < 0;
  const unsigned __int128 u = negative ? -static_cast<unsigned __int128>(S) : static_cast<unsigned __int128>(S);
  const int h = top_bit(u);
  const int lead = h + q;  // the exponent of the leading bit
  if (lead > 127) return det::float_of_bits(negative ? 0xff800000u : 0x7f800000u);
  const int low = lead - 23 > -149 ? lead - 23 : -149;  // the exponent of the last kept bit
  const int drop = low - q;                             // bits of u below it
  uint64_t kept;
  if (drop <= 0) {
    kept = static_cast<uint64_t>(u << -drop);
  } else if (drop > h + 1) {
    kept = 0;  // below half the smallest subnormal
  } else {
    kept = static_cast<uint64_t>(u >> drop);
    const unsigned __int128 rest = u & ((static_cast<unsigned __int128>(1) << drop) - 1);
    const unsigned __int128 half = static_cast<unsigned __int128>(1) << (drop - 1);
    if (rest > half || (rest == half && (kept & 1u) != 0)) ++kept;
  }
  const float mag = static_cast<float>(kept) * pow2(low);  // kept ≤ 2^24: exact, or ±Inf past the range
  return negative ? -mag : mag;
}

// round_scaled_bits's bits for an S in int64, or kNarrowMiss where only round_scaled_bits gives
// them: r = fp32(S) is S rounded to nearest even (a conversion, rounded as every fp32
// operation here), and r·2^q, formed by adding q to r's exponent, is S·2^q rounded once whenever
// r·2^q has a biased exponent in [2, 254]: then S·2^q ≥ 2^−126 before rounding (r ≤ 2·2^⌊log2|S|⌋),
// so both round S's 24 leading bits. A biased exponent past 254 is an overflow for both; subnormal
// results and wider S take round_scaled_bits.
constexpr uint32_t kNarrowMiss = 0xffffffffu;  // a NaN's bits, never a rounded S
SB_HD uint32_t round_scaled_narrow(int64_t S, int q) {
  const uint32_t r = det::bits_of(static_cast<float>(S));
  const int biased = static_cast<int>((r >> 23) & 0xffu) + q;
  if (S == 0) return 0u;
  if (biased > 254) return (r & 0x80000000u) | 0x7f800000u;
  return biased >= 2 ? r + (static_cast<uint32_t>(q) << 23) : kNarrowMiss;
}

// The exact GEMM's output element as bits for an S in int64: the quiet NaN when row i of op(A) or
// column j of op(B) holds a NaN or an Inf (finite: both false), else S·2^(E_i + F_j − 12s) rounded
// once (round_scaled_narrow), S = Σ_p X_ip·Y_pj; kNarrowMiss where exact_element must give it.
SB_HD uint32_t exact_element_narrow(int64_t S, int E, int F, int s, bool nonfinite) {
  return nonfinite ? 0x7fc00000u : round_scaled_narrow(S, E + F - 2 * kDigitBits * s);
}
// The exact GEMM's output element for any S: exact_element_narrow where it answers, else
// round_scaled_bits(S, E_i + F_j − 12s).
SB_HD float exact_element(__int128 S, int E, int F, int s, bool nonfinite) {
  if (S == static_cast<int64_t>(S)) {
    const uint32_t r = exact_element_narrow(static_cast<int64_t>(S), E, F, s, nonfinite);
    if (r != kNarrowMiss) return det::float_of_bits(r);
  }
  return nonfinite ? det::float_of_bits(0x7fc00000u) : round_scaled_bits(S, E + F - 2 * kDigitBits * s);
}

// Accumulating (C ← C + op(A)·op(B)): the rounded product added to C in one fp32 addition.
SB_HD float exact_accumulate(float c, float product) { return c + product; }

// Whether the integer dot of a k-long product fits int64 (|S| ≤ k·2^(12s) < 2^63).
SB_HD bool narrow_dot(int64_t k, int s) { return k < (int64_t{1} << (63 - 2 * kDigitBits * s)); }

// The integer dot S = Σ_v w[v·stride]·2^shift(v) from its sums per pair weight v. When narrow,
// wrapping 64-bit arithmetic ends at the exact S whatever its intermediate values.
SB_HD __int128 slice_dot(const int64_t* w, size_t stride, Digits d, bool narrow) {
  if (narrow) {
    uint64_t acc = 0;
    for (int v = 0; v < d.weights(); ++v) acc += static_cast<uint64_t>(w[v * stride]) << d.shift(v);
    return static_cast<int64_t>(acc);
  }
  __int128 acc = 0;
  for (int v = 0; v < d.weights(); ++v) acc += static_cast<__int128>(w[v * stride]) << d.shift(v);
  return acc;
}

// C's new value from the integer dot S: exact_element, added to c when accumulating.
SB_HD float exact_output(__int128 S, int E, int F, int s, bool nonfinite, bool accumulate, float c) {
  const float product = exact_element(S, E, F, s, nonfinite);
  return accumulate ? exact_accumulate(c, product) : product;
}

}  // namespace sb::ops::exact
