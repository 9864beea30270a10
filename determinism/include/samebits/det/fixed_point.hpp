// Fixed-point accumulation of fp32 values (docs/CONTRACT.md rule 4), one element at a time, host and
// device. An element is `limbs` int64 limbs of 32-bit digits (carry-save) over a static exponent
// window; integer addition makes every order, partition and world size give the same integers.
//
// Layout (limb-major): limb j of element i is at limb0[j·stride + i], stride = the element count n
// (coalesced on a GPU, contiguous per limb for SIMD on a CPU). docs/PRIMITIVES.md has the design.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "samebits/det/bits.hpp"
#include "samebits/det/digits.hpp"
#include "samebits/det/hd.hpp"

namespace sb::det {

// The element value is Σ_j limb_j·2^(lsb_exponent + 32j). Added values must satisfy
// |x| < 2^fixed_top_exponent(w) = 2^(lsb_exponent + 32·limbs - 1); below 2^lsb_exponent they are
// rounded to a multiple of 2^lsb_exponent, to nearest with ties to even, one value at a time.
// The default suits fp32 gradients: |x| < 2^27 (1.3e8) is accepted, every value >= 2^-77
// (6.6e-24) is added exactly, smaller ones lose at most 2^-101 each; 32 bytes per element.
struct FixedWindow {
  int lsb_exponent = -100;
  int limbs = 4;
};

constexpr int kFixedMaxLimbs = 8;

// Status bits, OR-ed into the caller's status word; the offending value is not added.
constexpr uint32_t kFixedOverflow = 1u;  // |x| >= 2^fixed_top_exponent(w), or headroom exhausted
constexpr uint32_t kFixedNaN = 2u;       // a NaN was added
constexpr uint32_t kFixedInf = 4u;       // an Inf was added

SB_HD int fixed_top_exponent(const FixedWindow& w) { return w.lsb_exponent + 32 * w.limbs - 1; }

// A window the functions below accept: 1..kFixedMaxLimbs limbs, top exponent in [-126, 400],
// lsb exponent >= -400.
SB_HD bool fixed_window_valid(const FixedWindow& w) {
  const int top = fixed_top_exponent(w);
  return w.limbs >= 1 && w.limbs <= kFixedMaxLimbs && top >= -126 && top <= 400 && w.lsb_exponent >= -400;
}

// Bits of 2^top as a float (the first |x| bit pattern that overflows); +Inf's bits when top > 127.
SB_HD uint32_t fixed_limit_bits(const FixedWindow& w) {
  const int top = fixed_top_exponent(w);
  return top > 127 ? 0x7F800000u : static_cast<uint32_t>(top + 127) << 23;
}

// The digits of |x| in the window: limb k gets lo, limb k+1 gets hi (hi = 0 when k is the top).
struct FixedDigits {
  int k;
  uint64_t lo, hi;
};

// Digits of a finite |x| (abs_bits: its bits without the sign) that is below the window's top.
SB_HD FixedDigits fixed_digits(uint32_t abs_bits, const FixedWindow& w) {
  const uint32_t biased = abs_bits >> 23;
  const uint64_t m = biased != 0 ? ((abs_bits & 0x7FFFFFu) | 0x800000u) : abs_bits;
  const int e = (biased != 0 ? static_cast<int>(biased) : 1) - 150;  // |x| = m·2^e
  const int p = e - w.lsb_exponent;
  if (p >= 0) {
    const uint64_t v = m << (p & 31);  // < 2^55
    return {p >> 5, v & digits::kDigitMask, v >> 32};
  }
  // Below the window: m·2^p rounded to an integer, ties to even (m < 2^24, so a shift of 31 or more
  // rounds to 0 exactly like the true shift).
  const int sh = -p < 31 ? -p : 31;
  const uint64_t q = m >> sh, rest = m & ((1ull << sh) - 1), half = 1ull << (sh - 1);
  const uint64_t up = (rest > half || (rest == half && (q & 1) != 0)) ? 1 : 0;
  return {0, q + up, 0};
}

// Adds x to one element: limb0 points at the element's limb 0, limb j at limb0[j·stride]. Every
// limb moves by less than 2^32. NaN, Inf and values at or above the window's top are not added and
// OR their bit into *status (a caller-local word: reduce it with OR / atomicOr afterwards).
SB_HD void fixed_add(int64_t* limb0, size_t limb_stride, float x, const FixedWindow& w, uint32_t* status) {
  const uint32_t bits = bits_of(x);
  const uint32_t abs_bits = bits & 0x7FFFFFFFu;
  if (abs_bits >= 0x7F800000u) {
    *status |= abs_bits > 0x7F800000u ? kFixedNaN : kFixedInf;
    return;
  }
  if (abs_bits >= fixed_limit_bits(w)) {
    *status |= kFixedOverflow;
    return;
  }
  const FixedDigits d = fixed_digits(abs_bits, w);
  const int64_t sign = -static_cast<int64_t>(bits >> 31);  // 0 or -1
  for (int j = 0; j < w.limbs; ++j) {
    const uint64_t digit = (j == d.k ? d.lo : 0) + (j == d.k + 1 ? d.hi : 0);
    limb0[j * limb_stride] += (static_cast<int64_t>(digit) ^ sign) - sign;
  }
}

// Carry propagation of one element to its canonical limbs (digits::canonicalize): the same
// integers for the same exact sum, whatever additions and merges produced it.
SB_HD void fixed_normalize(int64_t* limb0, size_t limb_stride, const FixedWindow& w) {
  digits::canonicalize(limb0, w.limbs, limb_stride);
}

template <int kLimbs>
SB_HD float fixed_round_f32_n(const int64_t* limb0, size_t limb_stride, int lsb_exponent) {
  int64_t limb[kLimbs];
  SB_DIGITS_UNROLL
  for (int j = 0; j < kLimbs; ++j) limb[j] = limb0[j * limb_stride];
  digits::canonicalize(limb, kLimbs, 1);
  return float_of_bits(static_cast<uint32_t>(digits::round_to_bits<kLimbs>(limb, lsb_exponent, digits::kBinary32)));
}

// The element's exact value rounded to fp32, to nearest with ties to even (an exact zero is +0).
// The limbs need not be normalized (each |limb| < 2^62).
SB_HD float fixed_round_f32(const int64_t* limb0, size_t limb_stride, const FixedWindow& w) {
  switch (w.limbs) {
    case 1: return fixed_round_f32_n<1>(limb0, limb_stride, w.lsb_exponent);
    case 2: return fixed_round_f32_n<2>(limb0, limb_stride, w.lsb_exponent);
    case 3: return fixed_round_f32_n<3>(limb0, limb_stride, w.lsb_exponent);
    case 4: return fixed_round_f32_n<4>(limb0, limb_stride, w.lsb_exponent);
    case 5: return fixed_round_f32_n<5>(limb0, limb_stride, w.lsb_exponent);
    case 6: return fixed_round_f32_n<6>(limb0, limb_stride, w.lsb_exponent);
    case 7: return fixed_round_f32_n<7>(limb0, limb_stride, w.lsb_exponent);
    default: return fixed_round_f32_n<8>(limb0, limb_stride, w.lsb_exponent);
  }
}

}  // namespace sb::det
