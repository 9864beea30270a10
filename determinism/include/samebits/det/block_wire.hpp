// The exact all-reduce's wire format (docs/DISTRIBUTED.md §7), host and device: per block of
// kWireBlock elements, a bit range agreed by a MAX all-reduce, then biased fields bit-packed into
// int64 words with headroom, so that an ordinary int64 SUM all-reduce adds every field carry-free.
// Every step is integer arithmetic on exact values: the decoded sums are the exact sums of the
// fixed-point accumulator (fixed_point.hpp), the same integers for any world size and partition.
//
// Frame: integers in units of 2^FixedWindow{}.lsb_exponent (the default 4-limb window). A leaf value
// x adds q(x) = fixed_digits(x) (rounded below the window exactly as fixed_add does). Per block:
//   lo = min over every added q != 0 (all leaves, all ranks) of ctz(q),
//   hi = max of bitlength(|q|)  (0: no nonzero value in the block — it sends nothing),
//   A  = adds over all ranks, h = ceil(log2 A), a = this rank's adds.
// Rank r's partial sum S (a multiple of 2^lo, |S| <= a·(2^hi - 2^lo)) travels as the field
//   F = S/2^lo + a·2^(hi-lo) in [0, 2^width), width = hi - lo + 1 + h,
// and Σ_r F < A·2^(hi-lo+1) <= 2^width: the fields' sum never leaves its width. The block's fields
// form one bit stream (element e at bit e·width), cut into chunks of 64 - h bits, one per int64
// word; at most A ranks contribute non-zero words, so a word's SUM stays below A·2^(64-h) <= 2^64.
// Decoding propagates the chunk carries and reads Σ S = (G - A·2^(hi-lo))·2^lo for each element.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "samebits/det/fixed_point.hpp"
#include "samebits/det/hd.hpp"
#include "samebits/det/wide_int.hpp"

namespace sb::det {

constexpr int kWireBlock = 32;

// Bit range of one value's q(x) in the frame, as the two MAX-reduced bytes: hi = bitlength(|q|)
// (<= 127) and 255 - lo (lo = ctz(q)). q = 0, NaN, Inf and refused values give {0, 0}: no range.
struct WireRange {
  uint8_t hi;
  uint8_t lo_flip;  // 255 - lo
};

SB_HD int wire_bitlength(uint64_t v) {  // 0 for v = 0; v < 2^64
  const uint64_t hi = v >> 32, lo = v & digits::kDigitMask;
  return hi != 0 ? 33 + digits::msb_index(hi) : (lo != 0 ? 1 + digits::msb_index(lo) : 0);
}

SB_HD WireRange wire_range(float x, const FixedWindow& w) {
  const uint32_t abs_bits = bits_of(x) & 0x7FFFFFFFu;
  if (abs_bits >= 0x7F800000u || abs_bits >= fixed_limit_bits(w)) return {0, 0};
  const FixedDigits d = fixed_digits(abs_bits, w);
  const uint64_t v = d.lo | (d.hi << 32);  // q = v·2^(32k), v < 2^55
  if (v == 0) return {0, 0};
  const int top = 32 * d.k + wire_bitlength(v);
  const int tz = 32 * d.k + wire_bitlength(v & (~v + 1)) - 1;
  return {static_cast<uint8_t>(top), static_cast<uint8_t>(255 - tz)};
}

SB_HD WireRange wire_range_max(WireRange a, WireRange b) {
  return {a.hi > b.hi ? a.hi : b.hi, a.lo_flip > b.lo_flip ? a.lo_flip : b.lo_flip};
}

SB_HD int wire_ceil_log2(uint64_t a) {  // smallest h with 2^h >= a (0 for a <= 1)
  int h = 0;
  while (h < 63 && (uint64_t{1} << h) < a) ++h;
  return h;
}

// A block's encoding, a function of (its agreed range, its element count, A) only.
struct BlockWire {
  int lo;          // the fields' unit: 2^lo in the frame
  int span;        // hi - lo: the bias of one add is 2^span
  int width;       // bits per field
  int chunk;       // payload bits per word: 64 - h
  uint64_t words;  // int64 words of the block (0 for an empty block)
};

SB_HD BlockWire block_wire(WireRange r, int count, uint64_t total_adds) {
  if (r.hi == 0 || count == 0) return {0, 0, 0, 64, 0};
  const int lo = 255 - r.lo_flip, h = wire_ceil_log2(total_adds);
  const int width = r.hi - lo + 1 + h, chunk = 64 - h;
  const uint64_t bits = static_cast<uint64_t>(count) * static_cast<uint64_t>(width);
  return {lo, r.hi - lo, width, chunk, (bits + static_cast<uint64_t>(chunk) - 1) / chunk};
}

// Writes f's low `width` bits at bit `pos` of the chunk stream (words zeroed beforehand).
SB_HD void wire_put(uint64_t* words, const BlockWire& bw, uint64_t pos, const Wide192& f) {
  int done = 0;
  while (done < bw.width) {
    const uint64_t k = pos / static_cast<uint64_t>(bw.chunk);
    const int off = static_cast<int>(pos % static_cast<uint64_t>(bw.chunk));
    int len = bw.chunk - off;
    len = len < bw.width - done ? len : bw.width - done;
    len = len < 64 ? len : 64;
    words[k] |= wide_bits(f, done, len) << off;
    pos += static_cast<uint64_t>(len);
    done += len;
  }
}

// Reads `width` bits at bit `pos` of a carry-propagated chunk stream.
SB_HD Wide192 wire_get(const uint64_t* words, const BlockWire& bw, uint64_t pos) {
  Wide192 f = {{0, 0, 0}};
  int done = 0;
  while (done < bw.width) {
    const uint64_t k = pos / static_cast<uint64_t>(bw.chunk);
    const int off = static_cast<int>(pos % static_cast<uint64_t>(bw.chunk));
    int len = bw.chunk - off;
    len = len < bw.width - done ? len : bw.width - done;
    len = len < 64 ? len : 64;
    const uint64_t piece = (words[k] >> off) & (len == 64 ? ~uint64_t{0} : (uint64_t{1} << len) - 1);
    f = wide_add(f, wide_shl(Wide192{{piece, 0, 0}}, done));
    pos += static_cast<uint64_t>(len);
    done += len;
  }
  return f;
}

// Writes the low `width` (<= 64) bits of f at bit `pos`: wire_put's fast path for narrow fields.
SB_HD void wire_put64(uint64_t* words, const BlockWire& bw, uint64_t pos, uint64_t f) {
  int done = 0;
  while (done < bw.width) {
    const uint64_t k = pos / static_cast<uint64_t>(bw.chunk);
    const int off = static_cast<int>(pos % static_cast<uint64_t>(bw.chunk));
    int len = bw.chunk - off;
    len = len < bw.width - done ? len : bw.width - done;
    const uint64_t piece = len == 64 ? f : (f >> done) & ((uint64_t{1} << len) - 1);
    words[k] |= piece << off;
    pos += static_cast<uint64_t>(len);
    done += len;
  }
}

// Reads `width` (<= 64) bits at bit `pos`: wire_get's fast path.
SB_HD uint64_t wire_get64(const uint64_t* words, const BlockWire& bw, uint64_t pos) {
  uint64_t f = 0;
  int done = 0;
  while (done < bw.width) {
    const uint64_t k = pos / static_cast<uint64_t>(bw.chunk);
    const int off = static_cast<int>(pos % static_cast<uint64_t>(bw.chunk));
    int len = bw.chunk - off;
    len = len < bw.width - done ? len : bw.width - done;
    const uint64_t piece = len == 64 ? words[k] : (words[k] >> off) & ((uint64_t{1} << len) - 1);
    f |= piece << done;
    pos += static_cast<uint64_t>(len);
    done += len;
  }
  return f;
}

// Encodes a block: value(e) gives element e's partial sum S / 2^lo (exact: S is a multiple of
// 2^lo) as a Wide192, e < count. words: (bw.words), overwritten. local_adds: this rank's adds (a).
// Fields of at most 64 bits take 64-bit arithmetic (S/2^lo then fits an int64, F a uint64).
template <class Value>
SB_HD void wire_encode_block(uint64_t* words, const BlockWire& bw, int count, uint64_t local_adds,
                             Value value) {
  for (uint64_t k = 0; k < bw.words; ++k) words[k] = 0;
  if (bw.words == 0) return;
  if (bw.width <= 64) {
    const uint64_t bias = local_adds << bw.span;  // a·2^span < 2^width
    for (int e = 0; e < count; ++e) {
      wire_put64(words, bw, static_cast<uint64_t>(e) * static_cast<uint64_t>(bw.width),
                 value(e).w[0] + bias);
    }
    return;
  }
  const Wide192 bias = wide_shl(wide_from_i64(static_cast<int64_t>(local_adds)), bw.span);
  for (int e = 0; e < count; ++e) {
    wire_put(words, bw, static_cast<uint64_t>(e) * static_cast<uint64_t>(bw.width),
             wide_add(value(e), bias));
  }
}

// Decodes a block after the int64 SUM: store(e, Σ S / 2^lo) receives element e's exact total in
// units of 2^bw.lo. words: (bw.words), carry-propagated in place. An empty block stores zeros.
template <class Store>
SB_HD void wire_decode_block(uint64_t* words, const BlockWire& bw, int count, uint64_t total_adds,
                             Store store) {
  const uint64_t mask = bw.chunk == 64 ? ~uint64_t{0} : (uint64_t{1} << bw.chunk) - 1;
  uint64_t carry = 0;
  for (uint64_t k = 0; k < bw.words; ++k) {
    const uint64_t high = bw.chunk == 64 ? 0 : words[k] >> bw.chunk;
    const uint64_t s = (words[k] & mask) + carry;  // no wrap: carry = 0 when chunk = 64 (A <= 1)
    words[k] = s & mask;
    carry = high + (bw.chunk == 64 ? 0 : s >> bw.chunk);
  }
  if (bw.words == 0) {
    for (int e = 0; e < count; ++e) store(e, wide_from_i64(0));
    return;
  }
  if (bw.width <= 64) {
    const uint64_t bias = total_adds << bw.span;  // A·2^span <= 2^(width-1)
    for (int e = 0; e < count; ++e) {
      const uint64_t g =
          wire_get64(words, bw, static_cast<uint64_t>(e) * static_cast<uint64_t>(bw.width));
      store(e, wide_from_i64(static_cast<int64_t>(g - bias)));  // |Σ S / 2^lo| < 2^63
    }
    return;
  }
  const Wide192 bias = wide_shl(wide_from_i64(static_cast<int64_t>(total_adds)), bw.span);
  for (int e = 0; e < count; ++e) {
    const Wide192 g = wire_get(words, bw, static_cast<uint64_t>(e) * static_cast<uint64_t>(bw.width));
    store(e, wide_sub(g, bias));
  }
}

}  // namespace sb::det
