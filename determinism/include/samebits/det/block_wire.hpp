// The exact all-reduce's wire format (docs/DISTRIBUTED.md §7), host and device: per block of
// kWireBlock elements a top bit and, per group of kWireGroup elements, a low bit, agreed by a MAX
// all-reduce; then biased fields bit-packed into uint64 words with headroom, so that an ordinary
// uint64 SUM all-reduce adds every field carry-free. Every step is integer arithmetic on exact
// values: the decoded sums are the exact sums of the fixed-point accumulator (fixed_point.hpp), the
// same integers for any world size and partition.
//
// Frame: integers in units of 2^FixedWindow{}.lsb_exponent (the default 4-limb window). A leaf value
// x adds q(x) = fixed_digits(x) (rounded below the window exactly as fixed_add does). Per block:
//   hi = max of bitlength(|q|) over every added q (all leaves, all ranks; 0: nothing to send),
// per group g of the block:
//   lo_g = min over every added q != 0 of the group of ctz(q)  (none: the group sends nothing),
// and A = adds over all ranks, h = ceil(log2 A), a = this rank's adds. Rank r's partial sum S of an
// element of group g (a multiple of 2^lo_g, |S| <= a·(2^hi - 2^lo_g)) travels as the field
//   F = S/2^lo_g + a·2^(hi-lo_g) in [0, 2^width), width = hi - lo_g + 1 + h,
// and Σ_r F < A·2^(hi-lo_g+1) <= 2^width: the fields' sum never leaves its width. The fields of a
// segment of kWireSegment blocks form one bit stream (elements in order, each group's fields
// `width` bits wide), cut into chunks of 64 - h bits, one per uint64 word; at most A ranks
// contribute non-zero words, so a word's SUM stays below A·2^(64-h) <= 2^64. Decoding propagates
// the chunk carries (none leaves a segment: its fields' sums end inside it) and reads
// Σ S = (G - A·2^(hi-lo_g))·2^lo_g for each element. Segments start on word boundaries, so they
// encode and decode independently (one task each).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "samebits/det/fixed_point.hpp"
#include "samebits/det/hd.hpp"
#include "samebits/det/wide_int.hpp"

namespace sb::det {

constexpr int kWireBlock = 32;  // elements per block: one top bit
constexpr int kWireGroup = 8;   // elements per group: one low bit
constexpr int kWireGroups = kWireBlock / kWireGroup;
constexpr int kWireSegment = 64;  // blocks per segment of the word stream

// Bit range of a block as MAX-reduced bytes: hi = the largest bitlength(|q|) (<= 127) and, per
// group, 255 - lo (lo = the smallest ctz(q), so 255 - lo >= 128). q = 0, NaN, Inf and refused
// values add nothing; {0, {0, ...}}: an empty block, lo_flip = 0: an empty group.
struct WireRange {
  uint8_t hi;
  uint8_t lo_flip[kWireGroups];
};

SB_HD int wire_bitlength(uint64_t v) {  // 0 for v = 0; v < 2^64
  const uint64_t hi = v >> 32, lo = v & digits::kDigitMask;
  return hi != 0 ? 33 + digits::msb_index(hi) : (lo != 0 ? 1 + digits::msb_index(lo) : 0);
}

// Folds value x, element e of its block, into r: its bitlength into hi, its ctz into its group.
SB_HD void wire_range_add(WireRange& r, int e, float x, const FixedWindow& w) {
  const uint32_t abs_bits = bits_of(x) & 0x7FFFFFFFu;
  if (abs_bits >= 0x7F800000u || abs_bits >= fixed_limit_bits(w)) return;
  const FixedDigits d = fixed_digits(abs_bits, w);
  const uint64_t v = d.lo | (d.hi << 32);  // q = v·2^(32k), v < 2^55
  if (v == 0) return;
  const int top = 32 * d.k + wire_bitlength(v);
  const int flip = 255 - (32 * d.k + wire_bitlength(v & (~v + 1)) - 1);
  if (top > r.hi) r.hi = static_cast<uint8_t>(top);
  uint8_t& g = r.lo_flip[e / kWireGroup];
  if (flip > g) g = static_cast<uint8_t>(flip);
}

// The range of a block's count values x (count <= kWireBlock). Values in [2^(lsb+23), 2^top) of
// the window (q = m·2^(biased - 150 - lsb) exactly, m the 24-bit significand) take a branch-free
// formula, ctz(m) read off the float of m's lowest set bit (exact: a power of two); a block with
// any other non-zero value (below the window, refused) folds every value with wire_range_add.
// *exact (when given): whether every non-zero value lies in that range.
SB_HD WireRange wire_block_range(const float* x, int count, const FixedWindow& w, bool* exact = nullptr) {
  const uint32_t exact_lo = static_cast<uint32_t>(w.lsb_exponent + 150) << 23;
  const uint32_t zone = fixed_limit_bits(w) - exact_lo;
  const int shift = -150 - w.lsb_exponent;  // q's exponent = biased + shift
  int top[kWireBlock], flip[kWireBlock];
  uint32_t odd = 0;
  for (int e = 0; e < count; ++e) {  // one element at a time, no branch: vectorizable
    const uint32_t a = bits_of(x[e]) & 0x7FFFFFFFu;
    const uint32_t in = 0u - static_cast<uint32_t>(a - exact_lo < zone);  // masks, not selects:
    odd |= ~in & static_cast<uint32_t>(a != 0);                           // gcc vectorizes these
    const int biased = static_cast<int>(a >> 23);
    const int32_t m = static_cast<int32_t>((a & 0x7FFFFFu) | 0x800000u);
    const int ctz = static_cast<int>(bits_of(static_cast<float>(m & -m)) >> 23) - 127;
    top[e] = static_cast<int>(static_cast<uint32_t>(biased + shift + 24) & in);
    flip[e] = static_cast<int>(static_cast<uint32_t>(255 - (biased + shift + ctz)) & in);
  }
  WireRange r = {0, {0}};
  if (exact != nullptr) *exact = odd == 0;
  if (odd != 0) {
    for (int e = 0; e < count; ++e) wire_range_add(r, e, x[e], w);
    return r;
  }
  int hi = 0;
  for (int e = 0; e < count; ++e) hi = top[e] > hi ? top[e] : hi;
  r.hi = static_cast<uint8_t>(hi);
  for (int g = 0; g * kWireGroup < count; ++g) {
    const int e1 = count < (g + 1) * kWireGroup ? count : (g + 1) * kWireGroup;
    int f = 0;
    for (int e = g * kWireGroup; e < e1; ++e) f = flip[e] > f ? flip[e] : f;
    r.lo_flip[g] = static_cast<uint8_t>(f);
  }
  return r;
}

SB_HD WireRange wire_range_max(const WireRange& a, const WireRange& b) {
  WireRange r = {a.hi > b.hi ? a.hi : b.hi, {0}};
  for (int g = 0; g < kWireGroups; ++g) r.lo_flip[g] = a.lo_flip[g] > b.lo_flip[g] ? a.lo_flip[g] : b.lo_flip[g];
  return r;
}

// The block's lowest bit: min over its groups' lo (0 for an empty block).
SB_HD int wire_block_lo(const WireRange& r) {
  int flip = 0;
  for (int g = 0; g < kWireGroups; ++g) flip = r.lo_flip[g] > flip ? r.lo_flip[g] : flip;
  return r.hi == 0 || flip == 0 ? 0 : 255 - flip;
}

SB_HD int wire_ceil_log2(uint64_t a) {  // smallest h with 2^h >= a (0 for a <= 1)
  int h = 0;
  while (h < 63 && (uint64_t{1} << h) < a) ++h;
  return h;
}

// One group's fields, a function of (the agreed range, h) only; width 0: the group sends nothing.
struct BlockWire {
  int lo;     // the fields' unit: 2^lo in the frame
  int span;   // hi - lo: the bias of one add is 2^span
  int width;  // bits per field
  int chunk;  // payload bits per word: 64 - h
};

SB_HD BlockWire wire_group(const WireRange& r, int g, int h) {
  if (r.hi == 0 || r.lo_flip[g] == 0) return {wire_block_lo(r), 0, 0, 64 - h};
  const int lo = 255 - r.lo_flip[g];
  return {lo, r.hi - lo, r.hi - lo + 1 + h, 64 - h};
}

// Elements of block b in a vector of n: [b·kWireBlock, min(n, (b+1)·kWireBlock)).
SB_HD int wire_count(int64_t b, int64_t n) {
  const int64_t rest = n - b * kWireBlock;
  return static_cast<int>(rest < kWireBlock ? rest : kWireBlock);
}
SB_HD int64_t wire_blocks(int64_t n) { return (n + kWireBlock - 1) / kWireBlock; }
SB_HD int64_t wire_segments(int64_t n) { return (wire_blocks(n) + kWireSegment - 1) / kWireSegment; }

// Segments [first, last) of a vector's wire: the unit a reduce-scatter hands out (a segment covers
// elements [s·kWireSegment·kWireBlock, (s+1)·kWireSegment·kWireBlock); its words encode and decode
// on their own).
struct WireRun {
  int64_t first = 0, last = 0;
};

// The groups of segment s of a vector of n in wire order (ranges: (wire_blocks(n))):
// group(b, e0, e1, bw) for elements [e0, e1) of block b, whose fields are bw. The one walk of
// wire_segment_words, wire_encode_segment and wire_decode_segment.
template <class Group>
SB_HD void wire_groups(const WireRange* ranges, int64_t s, int64_t n, int h, Group group) {
  const int64_t b1 = (s + 1) * kWireSegment < wire_blocks(n) ? (s + 1) * kWireSegment : wire_blocks(n);
  for (int64_t b = s * kWireSegment; b < b1; ++b) {
    const int c = wire_count(b, n);
    for (int g = 0; g * kWireGroup < c; ++g) {
      const int e1 = c < (g + 1) * kWireGroup ? c : (g + 1) * kWireGroup;
      group(b, g * kWireGroup, e1, wire_group(ranges[b], g, h));
    }
  }
}

// uint64 words of segment s of a vector of n (ranges: (wire_blocks(n))): a function of the agreed
// ranges and total_adds only.
SB_HD uint64_t wire_segment_words(const WireRange* ranges, int64_t s, int64_t n, uint64_t total_adds) {
  const int h = wire_ceil_log2(total_adds);
  uint64_t bits = 0;
  wire_groups(ranges, s, n, h, [&](int64_t, int e0, int e1, const BlockWire& bw) {
    bits += static_cast<uint64_t>(e1 - e0) * static_cast<uint64_t>(bw.width);
  });
  const uint64_t chunk = static_cast<uint64_t>(64 - h);
  return (bits + chunk - 1) / chunk;
}

// The pieces of a field `width` bits wide at bit `pos` of the chunk stream, low bits first:
// piece(k, off, len, done) for the field's bits [done, done + len), which lie at bit off of word k
// (len <= chunk <= 64). The one bit loop of wire_put, wire_get and their 64-bit forms.
template <class Piece>
SB_HD void wire_pieces(const BlockWire& bw, uint64_t pos, Piece piece) {
  for (int done = 0; done < bw.width;) {
    const uint64_t k = pos / static_cast<uint64_t>(bw.chunk);
    const int off = static_cast<int>(pos % static_cast<uint64_t>(bw.chunk));
    const int len = bw.chunk - off < bw.width - done ? bw.chunk - off : bw.width - done;
    piece(k, off, len, done);
    pos += static_cast<uint64_t>(len);
    done += len;
  }
}

SB_HD uint64_t wire_low_bits(uint64_t v, int len) {  // v's low len bits, len in [1, 64]
  return len == 64 ? v : v & ((uint64_t{1} << len) - 1);
}

// Writes f's low `width` bits at bit `pos` of the chunk stream (words zeroed beforehand).
SB_HD void wire_put(uint64_t* words, const BlockWire& bw, uint64_t pos, const Wide192& f) {
  wire_pieces(bw, pos, [&](uint64_t k, int off, int len, int done) { words[k] |= wide_bits(f, done, len) << off; });
}

// Reads `width` bits at bit `pos` of a carry-propagated chunk stream.
SB_HD Wide192 wire_get(const uint64_t* words, const BlockWire& bw, uint64_t pos) {
  Wide192 f = {{0, 0, 0}};
  wire_pieces(bw, pos, [&](uint64_t k, int off, int len, int done) {
    f = wide_add(f, wide_shl(Wide192{{wire_low_bits(words[k] >> off, len), 0, 0}}, done));
  });
  return f;
}

// Writes the low `width` (<= 64) bits of f at bit `pos`: wire_put's fast path for narrow fields.
SB_HD void wire_put64(uint64_t* words, const BlockWire& bw, uint64_t pos, uint64_t f) {
  wire_pieces(bw, pos,
              [&](uint64_t k, int off, int len, int done) { words[k] |= wire_low_bits(f >> done, len) << off; });
}

// Reads `width` (<= 64) bits at bit `pos`: wire_get's fast path.
SB_HD uint64_t wire_get64(const uint64_t* words, const BlockWire& bw, uint64_t pos) {
  uint64_t f = 0;
  wire_pieces(bw, pos,
              [&](uint64_t k, int off, int len, int done) { f |= wire_low_bits(words[k] >> off, len) << done; });
  return f;
}

// Encodes segment s: value(b, e, lo) gives element e of block b's partial sum S / 2^lo (exact: S
// is a multiple of 2^lo) as a Wide192. words: (wire_segment_words(...)), overwritten. local_adds:
// this rank's adds (a). Fields of at most 64 bits take 64-bit arithmetic (S/2^lo then fits an
// int64, F a uint64).
template <class Value>
SB_HD void wire_encode_segment(uint64_t* words, const WireRange* ranges, int64_t s, int64_t n, uint64_t total_adds,
                               uint64_t local_adds, Value value) {
  const uint64_t nw = wire_segment_words(ranges, s, n, total_adds);
  for (uint64_t k = 0; k < nw; ++k) words[k] = 0;
  const int h = wire_ceil_log2(total_adds);
  uint64_t pos = 0;
  wire_groups(ranges, s, n, h, [&](int64_t b, int e0, int e1, const BlockWire& bw) {
    if (bw.width == 0) return;
    if (bw.width <= 64) {
      const uint64_t bias = local_adds << bw.span;  // a·2^span < 2^width
      for (int e = e0; e < e1; ++e, pos += static_cast<uint64_t>(bw.width)) {
        wire_put64(words, bw, pos, value(b, e, bw.lo).w[0] + bias);
      }
      return;
    }
    const Wide192 bias = wide_shl(wide_from_i64(static_cast<int64_t>(local_adds)), bw.span);
    for (int e = e0; e < e1; ++e, pos += static_cast<uint64_t>(bw.width)) {
      wire_put(words, bw, pos, wide_add(value(b, e, bw.lo), bias));
    }
  });
}

// Decodes segment s after the uint64 SUM: store(b, e, lo, Σ S / 2^lo) receives element e of block
// b's exact total in units of 2^lo (an empty group: 0 with lo = wire_block_lo). words:
// (wire_segment_words(...)), carry-propagated in place.
template <class Store>
SB_HD void wire_decode_segment(uint64_t* words, const WireRange* ranges, int64_t s, int64_t n, uint64_t total_adds,
                               Store store) {
  const uint64_t nw = wire_segment_words(ranges, s, n, total_adds);
  const int h = wire_ceil_log2(total_adds), chunk = 64 - h;
  const uint64_t mask = chunk == 64 ? ~uint64_t{0} : (uint64_t{1} << chunk) - 1;
  uint64_t carry = 0;
  for (uint64_t k = 0; k < nw; ++k) {
    const uint64_t high = chunk == 64 ? 0 : words[k] >> chunk;
    const uint64_t sum = (words[k] & mask) + carry;  // no wrap: carry = 0 when chunk = 64 (A <= 1)
    words[k] = sum & mask;
    carry = high + (chunk == 64 ? 0 : sum >> chunk);
  }
  uint64_t pos = 0;
  wire_groups(ranges, s, n, h, [&](int64_t b, int e0, int e1, const BlockWire& bw) {
    if (bw.width == 0) {
      for (int e = e0; e < e1; ++e) store(b, e, bw.lo, wide_from_i64(0));
      return;
    }
    if (bw.width <= 64) {
      const uint64_t bias = total_adds << bw.span;  // A·2^span <= 2^(width-1)
      for (int e = e0; e < e1; ++e, pos += static_cast<uint64_t>(bw.width)) {
        const uint64_t f = wire_get64(words, bw, pos);
        store(b, e, bw.lo, wide_from_i64(static_cast<int64_t>(f - bias)));  // |Σ S / 2^lo| < 2^63
      }
      return;
    }
    const Wide192 bias = wide_shl(wide_from_i64(static_cast<int64_t>(total_adds)), bw.span);
    for (int e = e0; e < e1; ++e, pos += static_cast<uint64_t>(bw.width)) {
      store(b, e, bw.lo, wide_sub(wire_get(words, bw, pos), bias));
    }
  });
}

}  // namespace sb::det
