// Exact norms (docs/CONTRACT.md rule 5): squares of fp32 values are exact in fp64, so Σ x² is an
// exact det::ExactSum; its square root is then rounded once, correctly, to fp32. Host reductions
// over arrays run on OpenMP threads, each with its own ExactSum, merged exactly: the same bits
// on any thread count. Used by Muon's normalisation, clipping and every statistic.
#pragma once
#include <cstddef>
#include <cstdint>

#include "samebits/det/bits.hpp"
#include "samebits/det/exact_sum.hpp"
#include "samebits/det/hd.hpp"

namespace sb {

// IEEE square root in fp64 (correctly rounded on host and device).
SB_HD double sqrt_f64(double x) { return sqrt(x); }

// x² exactly: a 24-bit significand squared fits fp64's 53 bits (no overflow or underflow).
SB_HD double exact_square(float x) {
  const double d = x;
  return d * d;
}

// One element's terms of the update statistics (docs/OPTIM.md §4): d = fl64(after − before) (an
// fp64 subtraction), d² rounded in fp64, into delta_sq; before² (exact) into weight_sq.
SB_HD void add_update_squares(det::ExactSum& delta_sq, det::ExactSum& weight_sq, float before, float after) {
  const double d = static_cast<double>(after) - static_cast<double>(before);
  delta_sq.add(d * d);
  weight_sq.add(exact_square(before));
}

// How a parallel reduction (core/cuda/optim_kernels.cu) merges per-thread exact sums: each part's
// words (det::ExactSum::to_words) are added into `total` as 64-bit integers with `add(&total[j],
// word)` — a plain += on the host, an integer atomicAdd on a GPU. Wrap-around integer addition
// is associative and commutative, so the grid, the block size and the order in which blocks land
// cannot change the total, and exact_from_words(total) is the exact sum of all the parts (up to
// 2^30 parts: the words' bound).  total: (det::ExactSum::kWords)
template <class Add>
SB_HD void add_exact_words(unsigned long long* total, const det::ExactSum& part, const Add& add) {
  if (part.count() == 0) return;  // every word of an empty sum is 0
  int64_t words[det::ExactSum::kWords];
  part.to_words(words);
  for (int j = 0; j < det::ExactSum::kWords; ++j) {
    if (words[j] != 0) add(&total[j], static_cast<unsigned long long>(words[j]));
  }
}

// The exact sum whose words add up to `total` (add_exact_words).  total: (det::ExactSum::kWords)
inline det::ExactSum exact_from_words(const unsigned long long* total) {
  int64_t words[det::ExactSum::kWords];
  for (int j = 0; j < det::ExactSum::kWords; ++j) words[j] = static_cast<int64_t>(total[j]);
  return det::ExactSum::from_words(words);
}

namespace norm_detail {
// The sign of S − t, computed exactly (t = a midpoint squared, exact in fp64).
SB_HD int compare(const det::ExactSum& s, double t) {
  det::ExactSum diff = s;
  diff.add(-t);
  const double v = diff.to_f64();  // correct rounding keeps the sign; an exact 0 gives ±0
  return v > 0.0 ? 1 : (v < 0.0 ? -1 : 0);
}
}  // namespace norm_detail

// √S correctly rounded to fp32 (to nearest, ties to even) for an exact sum S ≥ 0: the candidate
// fl32(√fl64(S)) is within one ulp; the midpoints m to its neighbours are 25-bit numbers whose
// squares are exact in fp64, and the exact sign of S − m² picks the neighbour. +0 for S = 0,
// +Inf for S = +Inf or √S beyond the fp32 range, NaN for NaN or S < 0.
SB_HD float sqrt_rounded(const det::ExactSum& s) {
  const double d = s.to_f64();
  if (!(d >= 0.0)) return det::float_of_bits(0x7fc00000u);
  if (d == 0.0) return 0.0f;
  const float inf = det::float_of_bits(0x7f800000u);
  if (d > 1.7976931348623157e308) return inf;
  float r = static_cast<float>(sqrt_f64(d));
  const uint32_t rb = det::bits_of(r);
  if (rb == 0x7f800000u) {  // overflowed: FLT_MAX unless √S reaches its upper midpoint
    const double mid = 0x1.ffffffp127;
    return norm_detail::compare(s, mid * mid) < 0 ? det::float_of_bits(0x7f7fffffu) : inf;
  }
  const uint32_t e = rb >> 23;  // biased exponent (r > 0)
  const double ulp = e == 0 ? 0x1p-149 : static_cast<double>(det::float_of_bits(e << 23)) * 0x1p-23;
  const bool odd = (rb & 1u) != 0;
  const double hi = static_cast<double>(r) + 0.5 * ulp;
  const int above = norm_detail::compare(s, hi * hi);
  if (above > 0 || (above == 0 && odd)) return det::float_of_bits(rb + 1u);
  if (rb == 0u) return r;
  // Below a power of two (e > 1, zero mantissa) the next float down is half an ulp closer.
  const double ulp_below = ((rb & 0x7fffffu) == 0u && e > 1u) ? 0.5 * ulp : ulp;
  const double lo = static_cast<double>(r) - 0.5 * ulp_below;
  const int below = norm_detail::compare(s, lo * lo);
  if (below < 0 || (below == 0 && odd)) r = det::float_of_bits(rb - 1u);
  return r;
}

// max |x| as fp32 bits: for |x| the bit patterns order like the values, NaNs above +Inf, so the
// max of abs_bits over any partition, in any order, is one value; max_abs_of_bits maps it back
// (any NaN to the quiet NaN 0x7fc00000).
SB_HD uint32_t abs_bits(float x) { return det::bits_of(x) & 0x7fffffffu; }
SB_HD float max_abs_of_bits(uint32_t best) {
  return best > 0x7f800000u ? det::float_of_bits(0x7fc00000u) : det::float_of_bits(best);
}

// The binned sums' view of an fp32 with bits b: its biased exponent e (the bin) and its 24-bit
// integer significand m, so that |x| = m·2^(max(e,1) − 150) for e < 255.
struct Fp32Bin {
  uint32_t e;
  uint64_t m;
};
inline Fp32Bin fp32_bin(uint32_t b) {
  const uint32_t e = (b >> 23) & 0xFFu;
  return {e, (b & 0x7FFFFFu) | (e != 0 ? 0x800000u : 0u)};
}

// Σ x[i]² exactly (each square exact in fp64), by binned_sum_of_squares over blocks of
// kBinnedBlock on OpenMP threads, merged exactly.  x: (n), host memory
det::ExactSum sum_of_squares(const float* x, size_t n);
// Σ x[i] exactly, by binned_sum over blocks likewise.  x: (n), host memory
det::ExactSum exact_sum(const float* x, size_t n);

// Elements per block of the binned sums: each bin then receives at most 2^16 squares below 2^48,
// so no uint64 bin (nor the sum of its 4 interleaved sets) overflows.
constexpr size_t kBinnedBlock = size_t{1} << 16;
// Σ x[i]² exactly (the exact value of sum_of_squares): x = m·2^(s−150), s = max(e, 1), squares to
// the 48-bit integer m² times 2^(2s−300), an exact double. Per block of kBinnedBlock, the squares
// within 2^62 of the block's largest are split exactly onto three fixed fp64 grids whose sums of
// ≤ 2^16 terms are exact in any order (a vectorized loop; binned_sum.cpp proves the bounds), those
// below it and NaN/±Inf go into one integer bin per fp32 exponent, and both go into the ExactSum
// once per block (0.39 ns per element in cache, docs/PERFORMANCE.md). The exact value only: the
// ExactSum's count of added terms is this method's, not one per element.
// Single-threaded (callers parallelise over blocks).  x: (n), host memory.
det::ExactSum binned_sum_of_squares(const float* x, size_t n);

// add_update_squares over n pairs, exactly (the exact values of its two ExactSums, not their
// counts of terms): weight_sq += Σ before², delta_sq += Σ fl64(fl64(after − before)²). When
// fl32(after − before) equals fl64(after − before) (always when after is within a factor 2 of
// before, by Sterbenz's lemma) that d² is the exact square of an fp32, summed by
// binned_sum_of_squares; otherwise fl64(d·d) goes into the ExactSum (NaN included). Host only,
// single-threaded.  before, after: (n)
void binned_update_squares(det::ExactSum& delta_sq, det::ExactSum& weight_sq, const float* before, const float* after,
                           size_t n);

// Σ x[i] exactly (the exact value, zero sign and NaN/Inf rules of ExactSum::add per element): per
// block, the values within 49 binades of the block's largest on one fixed fp64 grid and its exact
// remainders (sums exact in any order, as binned_sum_of_squares), the rest as signed 24-bit
// significands in one integer bin per exponent (≤ 2^16 adds per bin: |bin| < 2^40), into the
// ExactSum once per block. Single-threaded.  x: (n), host memory.
det::ExactSum binned_sum(const float* x, size_t n);
// max |x[i]|: exact in any order; the canonical quiet NaN when any element is NaN; +0 for n = 0.
float max_abs(const float* x, size_t n);
// ‖x‖₂ = sqrt_rounded(sum_of_squares(x, n)).
float norm2(const float* x, size_t n);

}  // namespace sb
