// BlockAccumulator: the exact gradient sum of docs/CONTRACT.md rule 4 in block-local windows — the
// same integers as FixedAccumulator's 4 limbs (the frame of block_wire.hpp), kept per block of
// kWireBlock elements as 1, 2 or 3 int64 words per element in units of 2^base, base = the block's
// lowest set bit seen so far. A leaf that needs a lower base shifts the block (exact); one that
// needs more bits than the block holds widens it (exact). So the memory follows the gradients'
// dynamic range — 8 bytes per element for ordinary blocks — and the rounding is bitwise
// FixedAccumulator's for every input (tests/unit/test_block_wire.cpp). Integer operations only:
// any thread count, order or partition gives the same sums.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <utility>
#include <vector>

#include "samebits/det/block_wire.hpp"
#include "samebits/det/fixed_accumulator.hpp"
#include "samebits/det/huge_pages.hpp"
#include "samebits/det/wide_int.hpp"

namespace sb::det {

class BlockAccumulator {
 public:
  static constexpr uint64_t kMaxAdds = FixedAccumulator::kMaxAdds;

  explicit BlockAccumulator(size_t n);

  // this[i] += q(x[i]) for i < n (x: (n)); NaN, Inf and values beyond the window are refused and
  // set their status bit, as in fixed_add. OpenMP over blocks.
  void add(const float* x);
  // add(x) then add(y) in one pass over the sums (x, y: (n)): the same state bit for bit, its
  // words read and written once for two values (the leaves' accumulation is bound by that traffic).
  void add_pair(const float* x, const float* y);
  // A part of add(x) (y null) or add_pair(x, y), for a caller that runs its own pass beside it: the
  // blocks [first, last) on the calling thread, with the add count `adds_after` = adds() + 1 or 2;
  // returns their status bits. Once every block went through it exactly once, finish_adds(the
  // bits of all, 1 or 2) leaves the state of the add itself.
  uint32_t add_blocks(const float* x, const float* y, size_t first, size_t last, uint64_t adds_after);
  void finish_adds(uint32_t status, uint64_t count);
  // One add of x's elements in the ranges [first, first + count) (spans: (first, count) pairs,
  // disjoint; x: (n)), the others counted as zeros: the state add(y) gives for y = x there and +0
  // elsewhere (a block's elements outside every range are read as +0).
  void add_ranges(const float* x, const std::vector<std::pair<size_t, size_t>>& ranges);
  // out[i] = the exact sum of element i rounded to fp32, bitwise FixedAccumulator::round_to_fp32.
  void round_to_fp32(float* out) const;
  void clear();

  // The exact all-reduce (block_wire.hpp): (1) MAX all-reduce of ranges() as range_bytes() bytes;
  // (2) encode(total_adds) into wire(); (3) uint64 SUM all-reduce of wire(); (4) decode(...). After
  // it every rank holds the exact sum over all ranks, with adds() = total_adds.
  uint8_t* ranges() { return reinterpret_cast<uint8_t*>(ranges_.data()); }
  size_t range_bytes() const { return ranges_.size() * sizeof(WireRange); }
  void encode(uint64_t total_adds);
  // The words encode(total_adds) would write, without writing them (a world of one counts its
  // payload but sums nothing: exact_allreduce).
  size_t wire_words(uint64_t total_adds) const;
  uint64_t* wire() { return wire_.data(); }
  size_t wire_words() const { return wire_.size(); }
  void decode(uint64_t total_adds, uint32_t total_status);
  // The reduce-scatter's form: (2) the segments of runs[0], runs[1], … one after another into
  // wire() (a segment may appear in several runs), run_words[k] (when given) = the words of
  // runs[k]; (3) a uint64 SUM of at least the words decoded next; (4) the segments of `runs`
  // (ascending, disjoint) decoded from wire() at word first_word on, their words one after
  // another. The elements of those segments then hold the exact sums over all ranks; the others
  // keep this rank's own sums. Throws sb::Error for runs outside the wire or out of order.
  void encode(uint64_t total_adds, const std::vector<WireRun>& runs, uint64_t* run_words = nullptr);
  void decode(uint64_t total_adds, uint32_t total_status, const std::vector<WireRun>& runs, size_t first_word);
  int64_t segments() const { return wire_segments(static_cast<int64_t>(n_)); }

  // Element i's exact sum in the frame (units of 2^FixedWindow{}.lsb_exponent).
  Wide192 value(size_t i) const;
  size_t size() const { return n_; }
  size_t blocks() const { return blocks_.size(); }
  uint32_t status() const { return status_.bits; }
  uint64_t adds() const { return status_.adds; }
  // Bytes held: element words, block descriptors, ranges and the wire buffer's capacity.
  size_t memory_bytes() const;
  // Throws sb::Error naming `what` when any status bit is set (check_fixed_status).
  void check(const char* what) const;

 private:
  struct Block {
    uint8_t base = 0;                 // values are in units of 2^base (the frame's bit index)
    uint8_t words = 1;                // int64 words per element: 1, 2 or 3
    std::unique_ptr<uint64_t[]> ext;  // (words - 1, count): the upper words, when words > 1
  };
  size_t begin(size_t b) const { return b * kWireBlock; }
  int count(size_t b) const;
  Wide192 get(const Block& blk, size_t b, int e) const;  // in units of 2^base
  void set(Block& blk, size_t b, int e, const Wide192& v);
  // Re-bases block b to `base` and gives it `words` words per element, keeping every value.
  void reshape(size_t b, int base, int words);
  // Block b widened for values of range r (its ranges, base and words after the add that makes
  // adds_after adds): the one growth rule of add_block and add_pair_block.
  Block& grow(size_t b, const WireRange& r, uint64_t adds_after);
  uint32_t add_block(size_t b, const float* x, uint64_t adds_after);
  uint32_t add_block_values(size_t b, const float* xb, uint64_t adds_after);  // xb: block b's values
  uint32_t add_pair_block(size_t b, const float* x, const float* y, uint64_t adds_after);
  // The values of xb (c of them, block b) into the block's sums, after its reshape for them.
  void add_values(Block& blk, size_t b, const float* xb, int c, bool exact_only);
  // offset[s] = the first wire word of segment s, offset.back() = the wire's words.
  void wire_layout(uint64_t total_adds, std::vector<uint64_t>& offset) const;

  size_t n_;
  using HugeWords = std::vector<uint64_t, HugePageAllocator<uint64_t>>;
  HugeWords low_;                  // (n) word 0 of every element
  std::vector<Block> blocks_;      // (blocks)
  std::vector<WireRange> ranges_;  // (blocks) the bit ranges of every value added
  HugeWords wire_;                 // (wire_words) the encoded sums of the last encode()
  FixedStatus status_;
};

// Words per element a block needs for sums of `adds` values within range r (1..3).
int block_words_needed(const WireRange& r, uint64_t adds);

}  // namespace sb::det
