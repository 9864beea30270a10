// Big integers as int64 limbs holding 32-bit digits (carry-save), shared by ExactSum and the
// fixed-point accumulator: the canonical carry propagation and the correctly rounded (ties to even)
// conversion to fp32 / fp64. Pure integer arithmetic: identical bits on every host and device.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "samebits/det/bits.hpp"
#include "samebits/det/hd.hpp"

namespace sb::det::digits {

constexpr int64_t kDigitMask = 0xFFFFFFFF;

// Fully unrolls a short constant-trip loop, so that small limb arrays live in registers (host
// compilers would otherwise vectorize them through memory). Speed only: the arithmetic is the same.
#if defined(__CUDACC__)
#define SB_DIGITS_UNROLL _Pragma("unroll")
#elif defined(__GNUC__) && !defined(__clang__)
#define SB_DIGITS_UNROLL _Pragma("GCC unroll 16")
#else
#define SB_DIGITS_UNROLL
#endif

// Canonical form of V = Σ limb[j·stride]·2^(32j), j < n: limbs 0..n-2 in [0, 2^32), limb n-1 =
// floor(V / 2^(32(n-1))). Unique for each V, so equal sums give equal limbs whatever the order of
// the additions. Precondition: every |limb| < 2^63 - 2^31 (carries are below 2^31).
SB_HD void canonicalize(int64_t* limb, int n, size_t stride) {
  int64_t carry = 0;
  SB_DIGITS_UNROLL
  for (int j = 0; j < n - 1; ++j) {
    const int64_t v = limb[j * stride] + carry;
    carry = v >> 32;  // floor division (arithmetic shift)
    limb[j * stride] = v & kDigitMask;
  }
  limb[(n - 1) * stride] += carry;
}

// An IEEE binary format: precision p (with the implicit bit), smallest normal exponent, Inf bits.
struct IeeeFormat {
  int precision;
  int emin;
  uint64_t inf_bits;
  int sign_shift;
};
constexpr IeeeFormat kBinary32{24, -126, 0x7F800000u, 31};
constexpr IeeeFormat kBinary64{53, -1022, 0x7FF0000000000000ull, 63};

// Index of the most significant set bit of a nonzero digit (< 2^32): read from the exponent of its
// exact conversion to fp64, so no data-dependent branches and no intrinsics.
SB_HD int msb_index(uint64_t digit) { return static_cast<int>(bits_of(static_cast<double>(digit)) >> 52) - 1023; }

// Rounds V = Σ limb[j]·2^(lsb_exponent + 32j), j < n, to `format`, to nearest with ties to even,
// straight from the exact value (no double rounding); overflow gives ±Inf, V = 0 gives +0. `limb`
// (n contiguous limbs, canonical) is scratch: it is negated in place when V < 0. n is a template
// argument so that small accumulators unroll into registers: the hot path of rounding a tensor.
template <int n>
SB_HD uint64_t round_to_bits(int64_t* limb, int lsb_exponent, IeeeFormat format) {
  const int64_t sign = limb[n - 1] >> 63;  // 0, or -1 when V < 0: then take -V
  SB_DIGITS_UNROLL
  for (int j = 0; j < n; ++j) limb[j] = (limb[j] ^ sign) - sign;
  canonicalize(limb, n, 1);
  // The n + 1 digits of |V|: the top limb (< 2^63) gives two.
  uint64_t u[n + 1];
  SB_DIGITS_UNROLL
  for (int j = 0; j < n - 1; ++j) u[j] = static_cast<uint64_t>(limb[j]);
  u[n - 1] = static_cast<uint64_t>(limb[n - 1]) & kDigitMask;
  u[n] = static_cast<uint64_t>(limb[n - 1]) >> 32;
  int h = -1;  // the highest nonzero digit
  SB_DIGITS_UNROLL
  for (int j = 0; j <= n; ++j) h = u[j] != 0 ? j : h;
  if (h < 0) return 0;
  // Digits h, h-1, h-2 (0 below digit 0) and the OR of all digits under them, by selects.
  uint64_t dh = 0, d1 = 0, d2 = 0, below = 0;
  SB_DIGITS_UNROLL
  for (int j = 0; j <= n; ++j) {
    dh = j == h ? u[j] : dh;
    d1 = j == h - 1 ? u[j] : d1;
    d2 = j == h - 2 ? u[j] : d2;
    below |= j < h - 2 ? u[j] : 0;
  }
  const int b = msb_index(dh);
  const int msb_exponent = lsb_exponent + 32 * h + b;
  // T: the 64 bits from the MSB down, left-aligned; sticky: whether any bit below them is set.
  const uint64_t t = (((dh << 32) | d1) << (31 - b)) | (d2 >> (b + 1));
  below |= d2 & ((1ull << (b + 1)) - 1);
  const uint64_t sticky = below != 0 ? 1 : 0;
  // Exponent of the result's unit in the last place; `drop` low bits of T fall below it.
  const int p = format.precision;
  const int q_normal = msb_exponent - (p - 1);
  const int q_min = format.emin - (p - 1);
  const int q = q_normal > q_min ? q_normal : q_min;
  const int drop = 63 - (msb_exponent - q);  // >= 64 - p
  uint64_t mant = 0, rest = 0, half = 1;     // half an ulp, in units of T's last bit
  if (drop < 64) {
    mant = t >> drop;
    rest = t & ((1ull << drop) - 1);
    half = 1ull << (drop - 1);
  } else if (drop == 64) {
    rest = t;
    half = 1ull << 63;
  }  // drop > 64: V is below half the smallest subnormal and rounds to zero (rest 0 < half 1)
  const uint64_t tie = rest == half ? 1 : 0;
  mant += (rest > half ? 1 : 0) | (tie & (sticky | (mant & 1)));
  // mant·2^q, mant <= 2^p; a carry to 2^p bumps the exponent field by itself.
  uint64_t bits = (static_cast<uint64_t>(q - q_min) << (p - 1)) + mant;
  bits = bits > format.inf_bits ? format.inf_bits : bits;
  return bits | (static_cast<uint64_t>(sign & 1) << format.sign_shift);
}

}  // namespace sb::det::digits
