// A 192-bit two's-complement integer for the exact all-reduce's block codec (block_wire.hpp), host
// and device: enough for any element of the default fixed-point window (< 2^159 in units of its
// lsb) shifted to a block's base. Pure integer arithmetic: the same bits everywhere.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "samebits/det/hd.hpp"

namespace sb::det {

struct Wide192 {
  uint64_t w[3];  // w[0] least significant; w[2]'s top bit is the sign
};

SB_HD Wide192 wide_from_i64(int64_t v) {
  const uint64_t s = v < 0 ? ~uint64_t{0} : 0;
  return {{static_cast<uint64_t>(v), s, s}};
}

SB_HD bool wide_negative(const Wide192& a) { return (a.w[2] >> 63) != 0; }

SB_HD Wide192 wide_add(const Wide192& a, const Wide192& b) {
  Wide192 r;
  uint64_t carry = 0;
  for (int j = 0; j < 3; ++j) {
    const uint64_t s = a.w[j] + b.w[j];
    const uint64_t c1 = s < a.w[j] ? 1 : 0;
    r.w[j] = s + carry;
    carry = c1 + (r.w[j] < s ? 1 : 0);
  }
  return r;
}

SB_HD Wide192 wide_neg(const Wide192& a) {
  const Wide192 inv = {{~a.w[0], ~a.w[1], ~a.w[2]}};
  return wide_add(inv, wide_from_i64(1));
}

SB_HD Wide192 wide_sub(const Wide192& a, const Wide192& b) { return wide_add(a, wide_neg(b)); }

// a·2^s, 0 <= s < 192 (bits shifted out of the top are lost).
SB_HD Wide192 wide_shl(const Wide192& a, int s) {
  Wide192 r = {{0, 0, 0}};
  const int q = s >> 6, b = s & 63;
  for (int j = 2; j >= q; --j) {
    const uint64_t hi = a.w[j - q] << b;
    const uint64_t lo = (b != 0 && j - q - 1 >= 0) ? a.w[j - q - 1] >> (64 - b) : 0;
    r.w[j] = hi | lo;
  }
  return r;
}

// floor(a / 2^s), 0 <= s < 192 (arithmetic shift).
SB_HD Wide192 wide_sar(const Wide192& a, int s) {
  const uint64_t fill = wide_negative(a) ? ~uint64_t{0} : 0;
  Wide192 r = {{fill, fill, fill}};
  const int q = s >> 6, b = s & 63;
  for (int j = 0; j + q < 3; ++j) {
    const uint64_t lo = a.w[j + q] >> b;
    const uint64_t hi = b == 0 ? 0 : (j + q + 1 < 3 ? a.w[j + q + 1] : fill) << (64 - b);
    r.w[j] = lo | hi;
  }
  return r;
}

// Bits [pos, pos + len) of a as an unsigned number, 0 <= pos < 192, 1 <= len <= 64.
SB_HD uint64_t wide_bits(const Wide192& a, int pos, int len) {
  const Wide192 s = wide_sar(a, pos);
  return len == 64 ? s.w[0] : s.w[0] & ((uint64_t{1} << len) - 1);
}

// The value Σ_j limb[j·stride]·2^(32j), j < 4, of carry-save int64 limbs (any, canonical or not).
SB_HD Wide192 wide_from_limbs(const int64_t* limb0, size_t stride) {
  Wide192 r = {{0, 0, 0}};
  for (int j = 0; j < 4; ++j) r = wide_add(r, wide_shl(wide_from_i64(limb0[j * stride]), 32 * j));
  return r;
}

// The canonical 4 limbs of a (digits::canonicalize's form: limbs 0..2 in [0, 2^32), limb 3 signed).
// Precondition: -2^159 <= a < 2^159.
SB_HD void wide_to_limbs(const Wide192& a, int64_t* limb0, size_t stride) {
  for (int j = 0; j < 3; ++j) limb0[j * stride] = static_cast<int64_t>(wide_bits(a, 32 * j, 32));
  limb0[3 * stride] = static_cast<int64_t>(wide_sar(a, 96).w[0]);
}

}  // namespace sb::det
