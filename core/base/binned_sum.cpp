// Binned exact sums (exact_norm.hpp): Σ x and Σ x² over fp32 arrays, per block mostly in exact
// fp64 folds on fixed grids (the values within a window below the block's largest), the rest added
// as integers (one bin per fp32 exponent), then into a det::ExactSum once per block — the exact
// value of a plain ExactSum of the same terms (canonical limbs equal).
// Single-threaded; the callers (exact_norm.cpp, core/cpu/tensor_sums.cpp, core/cpu/optim_kernels.cpp)
// parallelise over blocks.
#include <algorithm>
#include <cstring>

#include "samebits/core/exact_norm.hpp"
#include "samebits/det/bits.hpp"

namespace sb {
namespace {

// 2^e for e in [-1022, 1023], exactly.
double pow2(int e) { return det::double_of_bits(static_cast<uint64_t>(e + 1023) << 52); }

// The bin v of fp32 exponent e < 255 (a sum of m² of its elements) into sum: x = m·2^(max(e,1) −
// 150), so x² = m²·2^(2·max(e,1) − 300); v = hi·2^32 + lo goes in as two doubles that are exact
// (hi, lo < 2^32 times a power of two in fp64's normal range).
void add_square_bin(det::ExactSum& sum, int e, uint64_t v) {
  if (v == 0) return;
  const int s = 2 * std::max(e, 1) - 300;
  sum.add(static_cast<double>(v >> 32) * pow2(s + 32));
  sum.add(static_cast<double>(v & 0xFFFFFFFFu) * pow2(s));
}

// The bins of one block's squares whose scale exponent max(e, 1) is below `below` (every element
// when below = 256), one per exponent, into sum; NaN and ±Inf by the ExactSum's own rules.
void add_square_bins(det::ExactSum& sum, const float* x, size_t n, uint32_t below) {
  uint64_t bins[4][256];  // 4 interleaved sets (independent add chains), one bin per exponent
  std::memset(bins, 0, sizeof bins);
  for (size_t i = 0; i < n; ++i) {
    const auto [e, m] = fp32_bin(det::bits_of(x[i]));
    if (std::max(e, 1u) < below) bins[i & 3][e] += m * m;
  }
  for (int e = 0; e < 255; ++e) add_square_bin(sum, e, bins[0][e] + bins[1][e] + bins[2][e] + bins[3][e]);
  // NaN and ±Inf (exponent 255; m ≠ 0 for both): the ExactSum's own rules.
  if ((bins[0][255] | bins[1][255] | bins[2][255] | bins[3][255]) != 0) {
    for (size_t i = 0; i < n; ++i) {
      if (((det::bits_of(x[i]) >> 23) & 0xFFu) == 0xFFu) sum.add(exact_square(x[i]));
    }
  }
}

constexpr size_t kLanes = 16;  // independent fold sums per lane (a flat loop the compiler vectorizes)

// A block's window: the values whose scale max(e, 1) is at least base go into its fp64 folds; a
// non-zero x below it is masked to 0 there and binned by the caller.
struct Window {
  uint32_t floor_bits;  // base's exponent field (1 when base ≤ 1: nothing is below)
  explicit Window(int base) : floor_bits(base > 1 ? static_cast<uint32_t>(base) << 23 : 1u) {}
  // |x| below the window and x ≠ 0: (a − 1) < (floor − 1), unsigned.
  uint32_t below(uint32_t b) const { return static_cast<uint32_t>((b & 0x7FFFFFFFu) - 1u < floor_bits - 1u); }
  double value(float x) const {  // x, or 0 below the window (a mask: no branch to vectorize)
    const uint32_t b = det::bits_of(x);
    return static_cast<double>(det::float_of_bits(b & (below(b) - 1u)));
  }
  bool any_below(const float* x, size_t n) const {
    uint32_t any = 0;
    for (size_t i = 0; i < n; ++i) any |= below(det::bits_of(x[i]));
    return any != 0;
  }
};

// fold(f, l, v) for each element's windowed value v, lane l = i mod kLanes, into kFolds arrays of
// lane sums; then each fold's total into sum when non-zero. Exact only on the callers' grids, where
// every partial sum of ≤ 2^16 terms is representable: then lanes and totals may add in any order.
template <int kFolds, class Fold>
void add_folds(det::ExactSum& sum, const float* x, size_t n, const Window& w, Fold fold) {
  double f[kFolds][kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
    for (size_t l = 0; l < kLanes; ++l) fold(f, l, w.value(x[i + l]));
  }
  for (size_t l = 0; i < n; ++i, ++l) fold(f, l, w.value(x[i]));
  for (int k = 0; k < kFolds; ++k) {
    double total = 0.0;
    for (size_t l = 0; l < kLanes; ++l) total += f[k][l];
    if (total != 0.0) sum.add(total);
  }
}

// One block's Σ x² (n ≤ kBinnedBlock) into sum, in fp64 folds (the extraction of ExBLAS and
// ReproBLAS, Demmel & Nguyen 2015). Every square x² = m²·2^(2s − 300), s = max(e, 1), m < 2^24, is
// an exact double below 2^U, U = 2·top − 252 (top: the block's largest s). The squares whose scale
// lies in the 32 binades [base, base + 31], base = top − 31, are multiples of 2^(U − 110); each is
// split exactly into three parts on fixed grids: h1 = fl(fl(v + C1) − C1), C1 = 1.5·2^(U + 16),
// is v rounded to a multiple of 2^(U − 36) (v + C1 stays in C1's binade), and v − h1 is that
// addition's rounding error, exactly representable (|v − h1| ≤ 2^(U − 37)); h2 likewise on the
// grid 2^(U − 73) with C2 = 1.5·2^(U − 21), and r2 = v − h1 − h2 (|r2| ≤ 2^(U − 74), a multiple of
// 2^(U − 110)). So every h1 is a multiple of 2^(U − 36) below 2^U, every h2 of 2^(U − 73) below
// 2^(U − 37), every r2 of 2^(U − 110) below 2^(U − 74): the sums of ≤ 2^16 of each, in any order and
// any grouping, need at most 52 bits on their grid and are exact doubles. So the vectorized loop's
// lanes may add in any order: the three sums are the exact value of Σ v, whatever the SIMD width.
// The squares below the window (|x| under 2^-31 of the block's largest: rare) are masked out of the
// folds and take the exponent bins; NaN and ±Inf take the bins for the whole block.
void add_block_squares(det::ExactSum& sum, const float* x, size_t n) {
  uint32_t top = 0;
  for (size_t i = 0; i < n; ++i) top = std::max(top, (det::bits_of(x[i]) >> 23) & 0xFFu);
  if (top == 0xFFu) return add_square_bins(sum, x, n, 256);  // NaN or ±Inf: every element binned
  const int s_top = static_cast<int>(std::max(top, 1u)), base = s_top - 31, U = 2 * s_top - 252;
  const Window window(base);
  const double c1 = 1.5 * pow2(U + 16), c2 = 1.5 * pow2(U - 21);
  add_folds<3>(sum, x, n, window, [c1, c2](double(&f)[3][kLanes], size_t l, double xd) {
    const double v = xd * xd;
    const double h1 = (v + c1) - c1;
    const double r1 = v - h1;
    const double h2 = (r1 + c2) - c2;
    f[0][l] += h1;
    f[1][l] += h2;
    f[2][l] += r1 - h2;
  });
  if (window.any_below(x, n)) add_square_bins(sum, x, n, static_cast<uint32_t>(base));
}

// The bins of one block's elements whose scale max(e, 1) is below `below` (every element when
// below = 256), one Σ ±m per exponent, into sum: x = ±m·2^(max(e,1) − 150), so a bin (|v| < 2^40)
// times that power of two is one exact double; NaN and ±Inf by the ExactSum's own rules.
void add_sum_bins(det::ExactSum& sum, const float* x, size_t n, uint32_t below) {
  int64_t bins[4][256];  // 4 interleaved sets, one bin per exponent: Σ ±m
  std::memset(bins, 0, sizeof bins);
  size_t specials = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t b = det::bits_of(x[i]);
    const auto [e, mu] = fp32_bin(b);
    const int64_t m = static_cast<int64_t>(mu);
    if (std::max(e, 1u) < below) bins[i & 3][e] += (b >> 31) != 0 ? -m : m;
    specials += e == 0xFFu;
  }
  for (int e = 0; e < 255; ++e) {
    const int64_t v = bins[0][e] + bins[1][e] + bins[2][e] + bins[3][e];
    if (v != 0) sum.add(static_cast<double>(v) * pow2(std::max(e, 1) - 150));
  }
  if (specials != 0 && below == 256) {
    for (size_t i = 0; i < n; ++i) {
      if (((det::bits_of(x[i]) >> 23) & 0xFFu) == 0xFFu) sum.add(x[i]);
    }
  }
}

// One block's Σ x (n ≤ kBinnedBlock) into sum, in one fp64 fold (as add_block_squares): every x
// is an exact double below 2^U, U = top − 126. Those whose scale lies in the 49 binades [base,
// top], base = top − 48, are multiples of 2^(U − 72); h = fl(fl(x + C) − C), C = 1.5·2^(U + 16),
// is x rounded to a multiple of 2^(U − 36) (|h| ≤ 2^U) and x − h its exact rounding error
// (|x − h| ≤ 2^(U − 37), a multiple of 2^(U − 72)): the sums of ≤ 2^16 of each, in any order,
// need at most 52 bits on their grids, so they are exact whatever the SIMD width. The elements
// below the window take the exponent bins; NaN and ±Inf the bins for the whole block. The sign of
// an exact zero: -0 only when every element was -0 (ExactSum's rule).
void add_block_sum(det::ExactSum& sum, const float* x, size_t n) {
  uint32_t top = 0, not_neg_zero = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t b = det::bits_of(x[i]);
    top = std::max(top, (b >> 23) & 0xFFu);
    not_neg_zero |= static_cast<uint32_t>(b != 0x80000000u);
  }
  if (top == 0xFFu) {
    add_sum_bins(sum, x, n, 256);
  } else {
    const int s_top = static_cast<int>(std::max(top, 1u)), base = s_top - 48, U = s_top - 126;
    const Window window(base);
    const double c = 1.5 * pow2(U + 16);
    add_folds<2>(sum, x, n, window, [c](double(&f)[2][kLanes], size_t l, double v) {
      const double h = (v + c) - c;
      f[0][l] += h;
      f[1][l] += v - h;
    });
    if (window.any_below(x, n)) add_sum_bins(sum, x, n, static_cast<uint32_t>(base));
  }
  sum.add(not_neg_zero != 0 ? 0.0 : -0.0);
}

}  // namespace

det::ExactSum binned_sum_of_squares(const float* x, size_t n) {
  det::ExactSum sum;
  for (size_t start = 0; start < n; start += kBinnedBlock)
    add_block_squares(sum, x + start, std::min(n, start + kBinnedBlock) - start);
  return sum;
}

det::ExactSum binned_sum(const float* x, size_t n) {
  det::ExactSum sum;
  for (size_t start = 0; start < n; start += kBinnedBlock)
    add_block_sum(sum, x + start, std::min(n, start + kBinnedBlock) - start);
  return sum;
}

void binned_update_squares(det::ExactSum& delta_sq, det::ExactSum& weight_sq, const float* before, const float* after,
                           size_t n) {
  constexpr size_t kChunk = 4096;
  float d[kChunk];  // (kChunk) the exact steps fl32(after − before), 0 where it rounds
  for (size_t start = 0; start < n; start += kChunk) {
    const size_t len = std::min(kChunk, n - start);
    const float *b = before + start, *a = after + start;
    uint32_t rounded = 0;
    for (size_t i = 0; i < len; ++i) {
      const float d32 = a[i] - b[i];
      const bool exact = static_cast<double>(d32) == static_cast<double>(a[i]) - static_cast<double>(b[i]);
      d[i] = exact ? d32 : 0.0f;
      rounded |= exact ? 0u : 1u;
    }
    if (rounded != 0) {  // rare: d beyond fp32's precision or range, or NaN
      for (size_t i = 0; i < len; ++i) {
        const double dd = static_cast<double>(a[i]) - static_cast<double>(b[i]);
        if (static_cast<double>(a[i] - b[i]) != dd) delta_sq.add(dd * dd);
      }
    }
    delta_sq.merge(binned_sum_of_squares(d, len));
    weight_sq.merge(binned_sum_of_squares(b, len));
  }
}

}  // namespace sb
