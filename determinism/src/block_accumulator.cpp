// BlockAccumulator: block-local exact sums and the host side of the exact all-reduce. Every block
// is independent and every operation is integer arithmetic, so OpenMP's split over blocks cannot
// change a bit; the wire layout is a function of the agreed ranges and the total add count only.
#include "samebits/det/block_accumulator.hpp"

#include <algorithm>
#include <cstddef>

#include "samebits/det/error.hpp"

namespace sb::det {

namespace {

constexpr FixedWindow kFrame = kGradientWindow;

// Sign-extends the top stored word into a Wide192.
Wide192 widen(const uint64_t* w, int words) {
  Wide192 v = {{0, 0, 0}};
  for (int j = 0; j < words; ++j) v.w[j] = w[j];
  const uint64_t fill = (w[words - 1] >> 63) != 0 ? ~uint64_t{0} : 0;
  for (int j = words; j < 3; ++j) v.w[j] = fill;
  return v;
}

}  // namespace

int block_words_needed(const WireRange& r, uint64_t adds) {
  if (r.hi == 0) return 1;
  // |sum| <= adds·(2^(hi-lo) - 1) units: hi - lo + ceil(log2 adds) magnitude bits and a sign.
  const int bits = r.hi - wire_block_lo(r) + 1 + wire_ceil_log2(adds);
  return bits <= 64 ? 1 : bits <= 128 ? 2 : 3;
}

BlockAccumulator::BlockAccumulator(size_t n)
    : n_(n), low_(n, 0), blocks_((n + kWireBlock - 1) / kWireBlock), ranges_(blocks_.size()) {}

int BlockAccumulator::count(size_t b) const {
  const size_t end = begin(b) + kWireBlock < n_ ? begin(b) + kWireBlock : n_;
  return static_cast<int>(end - begin(b));
}

Wide192 BlockAccumulator::get(const Block& blk, size_t b, int e) const {
  uint64_t w[3] = {low_[begin(b) + static_cast<size_t>(e)], 0, 0};
  const size_t c = static_cast<size_t>(count(b));
  for (int j = 1; j < blk.words; ++j) w[j] = blk.ext[static_cast<size_t>(j - 1) * c + e];
  return widen(w, blk.words);
}

void BlockAccumulator::set(Block& blk, size_t b, int e, const Wide192& v) {
  low_[begin(b) + static_cast<size_t>(e)] = v.w[0];
  const size_t c = static_cast<size_t>(count(b));
  for (int j = 1; j < blk.words; ++j) blk.ext[static_cast<size_t>(j - 1) * c + e] = v.w[j];
}

void BlockAccumulator::reshape(size_t b, int base, int words) {
  Block& blk = blocks_[b];
  const int c = count(b);
  const int shift = blk.base - base;  // >= 0: a lower base only
  if (shift == 0 && words == blk.words) return;
  if (blk.words == 1 && words == 1) {  // one word stays one word: the values fit it after the shift
    uint64_t* low = low_.data() + begin(b);
    for (int e = 0; e < c; ++e) low[e] = shift < 64 ? low[e] << shift : 0;  // 64+: zeros
    blk.base = static_cast<uint8_t>(base);
    return;
  }
  std::vector<Wide192> v(static_cast<size_t>(c));
  for (int e = 0; e < c; ++e) v[size_t(e)] = wide_shl(get(blk, b, e), shift);
  if (words != blk.words) {
    blk.ext = words > 1 ? std::make_unique<uint64_t[]>(static_cast<size_t>(words - 1) * c) : nullptr;
    blk.words = static_cast<uint8_t>(words);
  }
  blk.base = static_cast<uint8_t>(base);
  for (int e = 0; e < c; ++e) set(blk, b, e, v[size_t(e)]);
}

void BlockAccumulator::add_values(Block& blk, size_t b, const float* xb, int c, bool exact_only) {
  const uint32_t limit = fixed_limit_bits(kFrame);
  const int base = blk.base;
  uint64_t* low = low_.data() + begin(b);
  if (blk.words == 1 && exact_only) {
    // Branch-free (SIMD): q = m·2^p exactly; the sum fits 64 bits, so q / 2^base =
    // m·2^(p - base) < 2^63, and p - base >= -23 since 2^base divides q. Zeros add 0.
    for (int e = 0; e < c; ++e) {
      const uint32_t bits = bits_of(xb[e]);
      const uint32_t abs_bits = bits & 0x7FFFFFFFu;
      const uint64_t m = abs_bits != 0 ? (abs_bits & 0x7FFFFFu) | 0x800000u : 0;
      const int shift = static_cast<int>(abs_bits >> 23) - 150 - kFrame.lsb_exponent - base;
      const int left = shift > 0 ? shift : 0, right = shift < 0 ? (-shift < 31 ? -shift : 31) : 0;
      const uint64_t u = (m << left) >> right;
      low[e] += (bits >> 31) != 0 ? ~u + 1 : u;
    }
    return;
  }
  for (int e = 0; e < c; ++e) {
    const uint32_t bits = bits_of(xb[e]);
    const uint32_t abs_bits = bits & 0x7FFFFFFFu;
    if (abs_bits == 0 || abs_bits >= limit) continue;  // zero, or refused (NaN, Inf included)
    const FixedDigits d = fixed_digits(abs_bits, kFrame);
    const uint64_t v = d.lo | (d.hi << 32);
    if (v == 0) continue;
    // q = v·2^(32k) < 2^127, a multiple of 2^base: q / 2^base.
    const int shift = 32 * d.k - base;
    if (blk.words == 1) {  // the sum fits 64 bits, so q / 2^base < 2^63
      const uint64_t u = shift >= 0 ? v << shift : v >> -shift;
      low[e] += (bits >> 31) != 0 ? ~u + 1 : u;
      continue;
    }
    Wide192 q = {{v, 0, 0}};
    q = shift >= 0 ? wide_shl(q, shift) : wide_sar(q, -shift);
    if ((bits >> 31) != 0) q = wide_neg(q);
    set(blk, b, e, wide_add(get(blk, b, e), q));
  }
}

// Inlined into both callers (a call per 32-element block costs add_pair measurably).
[[gnu::always_inline]] inline BlockAccumulator::Block& BlockAccumulator::grow(size_t b, const WireRange& r,
                                                                              uint64_t adds_after) {
  Block& blk = blocks_[b];
  const bool empty = ranges_[b].hi == 0;
  ranges_[b] = wire_range_max(ranges_[b], r);
  const int lo = wire_block_lo(ranges_[b]);
  if (empty) blk.base = static_cast<uint8_t>(lo);  // every value is 0: any base holds it
  const int words = block_words_needed(ranges_[b], adds_after);
  reshape(b, lo < blk.base ? lo : blk.base, words > blk.words ? words : blk.words);
  return blk;
}

uint32_t BlockAccumulator::add_block(size_t b, const float* x, uint64_t adds_after) {
  return add_block_values(b, x + begin(b), adds_after);
}

uint32_t BlockAccumulator::add_block_values(size_t b, const float* xb, uint64_t adds_after) {
  const int c = count(b);
  const uint32_t limit = fixed_limit_bits(kFrame);
  bool exact_only = true;  // every non-zero value added exactly by one shift (none refused)
  // (A full block with its constant count: loops the compiler unrolls and vectorizes whole.)
  const WireRange r = c == kWireBlock ? wire_block_range(xb, kWireBlock, kFrame, &exact_only)
                                      : wire_block_range(xb, c, kFrame, &exact_only);
  uint32_t status = 0;
  if (!exact_only) {  // values below the window or refused: the status bits of the refused
    for (int e = 0; e < c; ++e) {
      const uint32_t a = bits_of(xb[e]) & 0x7FFFFFFFu;
      if (a >= 0x7F800000u) {
        status |= a > 0x7F800000u ? kFixedNaN : kFixedInf;
      } else if (a >= limit) {
        status |= kFixedOverflow;
      }
    }
  }
  if (r.hi == 0) return status;  // nothing but zeros and refused values
  add_values(grow(b, r, adds_after), b, xb, c, exact_only);
  return status;
}

// Two values per element in one visit of the block (its words read and written once): the
// state add_block(b, x, adds_after - 1), add_block(b, y, adds_after) leave — the same ranges, base
// and words (each is monotone in the ranges and the add count, so the pair's is the second add's)
// and the same integer sums. A block where either holds a value below the window or refused takes
// the two add_block calls.
uint32_t BlockAccumulator::add_pair_block(size_t b, const float* x, const float* y, uint64_t adds_after) {
  const int c = count(b);
  const float *xb = x + begin(b), *yb = y + begin(b);
  bool exact_x = true, exact_y = true;
  const WireRange rx =
      c == kWireBlock ? wire_block_range(xb, kWireBlock, kFrame, &exact_x) : wire_block_range(xb, c, kFrame, &exact_x);
  const WireRange ry =
      c == kWireBlock ? wire_block_range(yb, kWireBlock, kFrame, &exact_y) : wire_block_range(yb, c, kFrame, &exact_y);
  if (!exact_x || !exact_y) return add_block(b, x, adds_after - 1) | add_block(b, y, adds_after);
  const WireRange r = wire_range_max(rx, ry);
  if (r.hi == 0) return 0;  // zeros only
  Block& blk = grow(b, r, adds_after);
  add_values(blk, b, xb, c, true);
  add_values(blk, b, yb, c, true);
  return 0;
}

namespace {
// The status bits of block_add(b) over every block, OpenMP over blocks (each block is one
// thread's: the sums do not depend on the thread count).
template <class BlockAdd>
uint32_t over_blocks(size_t blocks, const BlockAdd& block_add) {
  const std::ptrdiff_t nb = static_cast<std::ptrdiff_t>(blocks);
  uint32_t status = 0;
#pragma omp parallel for schedule(static) reduction(| : status) if (nb > 64)
  for (std::ptrdiff_t b = 0; b < nb; ++b) status |= block_add(static_cast<size_t>(b));
  return status;
}
}  // namespace

void BlockAccumulator::add(const float* x) {
  const uint64_t adds_after = status_.adds + 1;
  finish_adds(over_blocks(blocks_.size(), [&](size_t b) { return add_block(b, x, adds_after); }), 1);
}

void BlockAccumulator::add_pair(const float* x, const float* y) {
  const uint64_t adds_after = status_.adds + 2;
  finish_adds(over_blocks(blocks_.size(), [&](size_t b) { return add_pair_block(b, x, y, adds_after); }), 2);
}

uint32_t BlockAccumulator::add_blocks(const float* x, const float* y, size_t first, size_t last, uint64_t adds_after) {
  SB_CHECK(first <= last && last <= blocks_.size(), "accumulator blocks [", first, ", ", last, ") of ", blocks_.size());
  uint32_t status = 0;
  for (size_t b = first; b < last; ++b) status |= y ? add_pair_block(b, x, y, adds_after) : add_block(b, x, adds_after);
  return status;
}

void BlockAccumulator::add_ranges(const float* x, const std::vector<std::pair<size_t, size_t>>& ranges) {
  const uint64_t adds_after = status_.adds + 1;
  std::vector<size_t> whole, part;  // the blocks wholly in a range (added as add() adds them), partly
  for (const auto& [first, n] : ranges) {
    SB_CHECK(first + n <= n_, "accumulator range [", first, ", ", first + n, ") of ", n_, " elements");
    for (size_t i = first; i < first + n;) {
      const size_t b = i / kWireBlock, end = std::min(first + n, begin(b) + size_t(count(b)));
      (i == begin(b) && end == begin(b) + size_t(count(b)) ? whole : part).push_back(b);
      i = end;
    }
  }
  std::sort(part.begin(), part.end());  // a block two ranges share is added once
  part.erase(std::unique(part.begin(), part.end()), part.end());
  uint32_t status = over_blocks(whole.size(), [&](size_t i) { return add_block(whole[i], x, adds_after); });
  for (const size_t b : part) {
    float block[kWireBlock] = {};  // the block's elements in a range, +0 elsewhere
    for (const auto& [first, n] : ranges)
      for (size_t i = std::max(first, begin(b)); i < std::min(first + n, begin(b) + size_t(count(b))); ++i)
        block[i - begin(b)] = x[i];
    status |= add_block_values(b, block, adds_after);
  }
  finish_adds(status, 1);
}

void BlockAccumulator::finish_adds(uint32_t status, uint64_t count) {
  status_.bits |= status;
  status_.count_adds(count);
}

Wide192 BlockAccumulator::value(size_t i) const {
  const size_t b = i / kWireBlock;
  const Block& blk = blocks_[b];
  return wide_shl(get(blk, b, static_cast<int>(i - begin(b))), blk.base);
}

void BlockAccumulator::round_to_fp32(float* out) const {
  const std::ptrdiff_t nb = static_cast<std::ptrdiff_t>(blocks_.size());
#pragma omp parallel for schedule(static) if (nb > 512)
  for (std::ptrdiff_t bi = 0; bi < nb; ++bi) {
    const size_t b = static_cast<size_t>(bi);
    const Block& blk = blocks_[b];
    const int c = count(b);
    float* o = out + begin(b);
    if (blk.words == 1) {
      // sum = v·2^(base + lsb) with v an int64: (float)v rounds to nearest even once, and the
      // power of two 2^(base + lsb) in [2^-100, 2^27] scales it exactly (normal results only:
      // |v| >= 1), so this is the exact sum rounded once, as fixed_round_f32 rounds it.
      const float scale = float_of_bits(static_cast<uint32_t>(blk.base + kFrame.lsb_exponent + 127) << 23);
      const uint64_t* low = low_.data() + begin(b);
      for (int e = 0; e < c; ++e) o[e] = static_cast<float>(static_cast<int64_t>(low[e])) * scale;
      continue;
    }
    for (int e = 0; e < c; ++e) {
      int64_t limb[4];
      wide_to_limbs(wide_shl(get(blk, b, e), blk.base), limb, 1);
      o[e] = fixed_round_f32(limb, 1, kFrame);
    }
  }
}

void BlockAccumulator::clear() {
  // Over the threads in add()'s schedule (the element words are 8 bytes per parameter).
  const std::ptrdiff_t nb = static_cast<std::ptrdiff_t>(blocks_.size());
#pragma omp parallel for schedule(static) if (nb > 64)
  for (std::ptrdiff_t b = 0; b < nb; ++b) {
    std::fill_n(low_.data() + begin(size_t(b)), count(size_t(b)), uint64_t{0});
    blocks_[size_t(b)] = Block{};
  }
  ranges_.assign(ranges_.size(), WireRange{0, 0});
  status_.clear();
}

void BlockAccumulator::wire_layout(uint64_t total_adds, std::vector<uint64_t>& offset) const {
  const int64_t n = static_cast<int64_t>(n_), ns = wire_segments(n);
  offset.assign(static_cast<size_t>(ns) + 1, 0);
  for (int64_t s = 0; s < ns; ++s) {
    offset[size_t(s) + 1] = offset[size_t(s)] + wire_segment_words(ranges_.data(), s, n, total_adds);
  }
}

void BlockAccumulator::encode(uint64_t total_adds) { encode(total_adds, {WireRun{0, segments()}}); }

size_t BlockAccumulator::wire_words(uint64_t total_adds) const {
  std::vector<uint64_t> offset;
  wire_layout(total_adds, offset);
  return static_cast<size_t>(offset.back());
}

void BlockAccumulator::decode(uint64_t total_adds, uint32_t total_status) {
  decode(total_adds, total_status, {WireRun{0, segments()}}, 0);
}

namespace {

// One segment's place in the wire: segment s at word `at`.
struct SegmentAt {
  int64_t s;
  uint64_t at;
};

// The segments of runs at their words from `first_word` on (offset: wire_layout's).
std::vector<SegmentAt> place(const std::vector<WireRun>& runs, const std::vector<uint64_t>& offset, uint64_t first_word,
                             uint64_t* run_words) {
  const int64_t ns = static_cast<int64_t>(offset.size()) - 1;
  std::vector<SegmentAt> out;
  uint64_t at = first_word;
  for (size_t k = 0; k < runs.size(); ++k) {
    const WireRun& r = runs[k];
    SB_CHECK(0 <= r.first && r.first <= r.last && r.last <= ns, "BlockAccumulator: wire run [", r.first, ", ", r.last,
             ") outside the ", ns, " segments of the wire");
    for (int64_t s = r.first; s < r.last; ++s) {
      out.push_back({s, at});
      at += offset[size_t(s) + 1] - offset[size_t(s)];
    }
    if (run_words != nullptr) run_words[k] = offset[size_t(r.last)] - offset[size_t(r.first)];
  }
  return out;
}

}  // namespace

void BlockAccumulator::encode(uint64_t total_adds, const std::vector<WireRun>& runs, uint64_t* run_words) {
  std::vector<uint64_t> offset;
  wire_layout(total_adds, offset);
  const std::vector<SegmentAt> seg = place(runs, offset, 0, run_words);
  wire_.resize(seg.empty() ? 0 : seg.back().at + offset[size_t(seg.back().s) + 1] - offset[size_t(seg.back().s)]);
  const int64_t n = static_cast<int64_t>(n_);
  const std::ptrdiff_t ns = static_cast<std::ptrdiff_t>(seg.size());
  // Element e of block b in units of 2^lo: this rank's sums of the element's group are multiples
  // of 2^lo (the agreed lo is at most their lowest bit), so every shift is exact; a right shift of
  // 64 or more meets only zeros. One word shifted left stays one word when no bit leaves it.
  const auto value = [&](int64_t b, int e, int lo) -> Wide192 {
    const Block& blk = blocks_[size_t(b)];
    const int d = blk.base - lo;
    if (blk.words == 1) {
      const int64_t v = static_cast<int64_t>(low_[begin(size_t(b)) + size_t(e)]);
      if (d < 0) return wide_from_i64(d > -64 ? v >> -d : 0);
      if (d < 64) {
        const int64_t up = static_cast<int64_t>(static_cast<uint64_t>(v) << d);
        if ((up >> d) == v) return wide_from_i64(up);
      }
      return wide_shl(wide_from_i64(v), d);
    }
    const Wide192 v = get(blk, size_t(b), e);
    return d >= 0 ? wide_shl(v, d) : wide_sar(v, -d);
  };
#pragma omp parallel for schedule(static) if (ns > 16)
  for (std::ptrdiff_t j = 0; j < ns; ++j) {
    wire_encode_segment(wire_.data() + seg[size_t(j)].at, ranges_.data(), seg[size_t(j)].s, n, total_adds, status_.adds,
                        value);
  }
}

void BlockAccumulator::decode(uint64_t total_adds, uint32_t total_status, const std::vector<WireRun>& runs,
                              size_t first_word) {
  std::vector<uint64_t> offset;
  wire_layout(total_adds, offset);
  for (size_t k = 1; k < runs.size(); ++k) {
    SB_CHECK(runs[k - 1].last <= runs[k].first,
             "BlockAccumulator::decode: wire runs must be "
             "ascending and disjoint; run ",
             k, " starts at segment ", runs[k].first, " before the previous one ends (", runs[k - 1].last, ")");
  }
  const std::vector<SegmentAt> seg = place(runs, offset, first_word, nullptr);
  const uint64_t end =
      seg.empty() ? first_word : seg.back().at + offset[size_t(seg.back().s) + 1] - offset[size_t(seg.back().s)];
  SB_CHECK(end <= wire_.size(),
           "BlockAccumulator::decode: the agreed ranges give the decoded "
           "segments words up to ",
           end, ", but encode() wrote ", wire_.size(),
           "; every rank must encode with the same MAX-reduced ranges and total add count");
  const int64_t n = static_cast<int64_t>(n_);
  // Σ S / 2^lo back in units of 2^base (base = the block's lowest lo): exact left shifts; the sum
  // fits the block's words (block_words_needed), so one word takes it whole.
  const auto store = [&](int64_t b, int e, int lo, const Wide192& v) {
    Block& blk = blocks_[size_t(b)];
    const int d = lo - blk.base;
    if (blk.words == 1) {
      low_[begin(size_t(b)) + size_t(e)] = d < 64 ? v.w[0] << d : 0;
      return;
    }
    set(blk, size_t(b), e, wide_shl(v, d));
  };
  const std::ptrdiff_t ns = static_cast<std::ptrdiff_t>(seg.size());
  const size_t nb = blocks_.size();
#pragma omp parallel for schedule(static) if (ns > 16)
  for (std::ptrdiff_t j = 0; j < ns; ++j) {
    const int64_t s = seg[size_t(j)].s;
    // The segment's blocks take the words and base of the summed ranges (their old values are
    // overwritten by the decode below).
    const size_t b1 = std::min(nb, static_cast<size_t>(s + 1) * kWireSegment);
    for (size_t b = static_cast<size_t>(s) * kWireSegment; b < b1; ++b) {
      Block& blk = blocks_[b];
      const int words = block_words_needed(ranges_[b], total_adds);
      blk.ext = words > 1 ? std::make_unique<uint64_t[]>(static_cast<size_t>(words - 1) * count(b)) : nullptr;
      blk.words = static_cast<uint8_t>(words);
      blk.base = static_cast<uint8_t>(wire_block_lo(ranges_[b]));
    }
    wire_decode_segment(wire_.data() + seg[size_t(j)].at, ranges_.data(), s, n, total_adds, store);
  }
  status_.reduced(total_adds, total_status);
}

size_t BlockAccumulator::memory_bytes() const {
  size_t bytes = low_.capacity() * sizeof(uint64_t) + blocks_.capacity() * sizeof(Block) +
                 ranges_.capacity() * sizeof(WireRange) + wire_.capacity() * sizeof(uint64_t);
  for (size_t b = 0; b < blocks_.size(); ++b) {
    bytes += static_cast<size_t>(blocks_[b].words - 1) * static_cast<size_t>(count(b)) * 8;
  }
  return bytes;
}

void BlockAccumulator::check(const char* what) const {
  check_fixed_status(what, status_.bits, kFrame, kGradientOverflowAdvice);
}

}  // namespace sb::det
