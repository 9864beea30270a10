// Binned exact sums (exact_norm.hpp): Σ x and Σ x² over fp32 arrays added as integers into one bin
// per fp32 exponent, then into a det::ExactSum once per block — the exact value of a plain ExactSum
// of the same terms (canonical limbs equal), about three times faster. Single-threaded; the
// callers (exact_norm.cpp, train/statistics.cpp) parallelise over blocks of kBinnedBlock.
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

}  // namespace

det::ExactSum binned_sum_of_squares(const float* x, size_t n) {
  det::ExactSum sum;
  uint64_t bins[4][256];  // 4 interleaved sets (independent add chains), one bin per exponent
  for (size_t start = 0; start < n; start += kBinnedBlock) {
    const size_t end = std::min(n, start + kBinnedBlock);
    std::memset(bins, 0, sizeof bins);
    for (size_t i = start; i < end; ++i) {
      const auto [e, m] = fp32_bin(det::bits_of(x[i]));
      bins[i & 3][e] += m * m;
    }
    for (int e = 0; e < 255; ++e)
      add_square_bin(sum, e, bins[0][e] + bins[1][e] + bins[2][e] + bins[3][e]);
    // NaN and ±Inf (exponent 255; m ≠ 0 for both): the ExactSum's own rules.
    if ((bins[0][255] | bins[1][255] | bins[2][255] | bins[3][255]) != 0) {
      for (size_t i = start; i < end; ++i) {
        if (((det::bits_of(x[i]) >> 23) & 0xFFu) == 0xFFu) sum.add(exact_square(x[i]));
      }
    }
  }
  return sum;
}

det::ExactSum binned_sum(const float* x, size_t n) {
  det::ExactSum sum;
  int64_t bins[4][256];  // 4 interleaved sets, one bin per exponent: Σ ±m
  for (size_t start = 0; start < n; start += kBinnedBlock) {
    const size_t end = std::min(n, start + kBinnedBlock);
    std::memset(bins, 0, sizeof bins);
    size_t specials = 0, not_neg_zero = 0;  // NaN/±Inf; elements other than -0
    for (size_t i = start; i < end; ++i) {
      const uint32_t b = det::bits_of(x[i]);
      const auto [e, mu] = fp32_bin(b);
      const int64_t m = static_cast<int64_t>(mu);
      bins[i & 3][e] += (b >> 31) != 0 ? -m : m;
      specials += e == 0xFFu;
      not_neg_zero += b != 0x80000000u;
    }
    // x = ±m·2^(max(e,1) − 150): a bin (|v| < 2^40) times that power of two is one exact double.
    for (int e = 0; e < 255; ++e) {
      const int64_t v = bins[0][e] + bins[1][e] + bins[2][e] + bins[3][e];
      if (v != 0) sum.add(static_cast<double>(v) * pow2(std::max(e, 1) - 150));
    }
    if (specials != 0) {  // NaN and ±Inf: the ExactSum's own rules
      for (size_t i = start; i < end; ++i) {
        if (((det::bits_of(x[i]) >> 23) & 0xFFu) == 0xFFu) sum.add(x[i]);
      }
    }
    // The sign of an exact zero: -0 only when every element was -0 (ExactSum's rule).
    sum.add(not_neg_zero != 0 ? 0.0 : -0.0);
  }
  return sum;
}

BinnedSquares::BinnedSquares() { std::memset(bins_, 0, sizeof bins_); }

void BinnedSquares::flush() {
  for (int e = 0; e < 255; ++e) {
    add_square_bin(sum_, e, bins_[0][e] + bins_[1][e]);
    bins_[0][e] = bins_[1][e] = 0;
  }
  pending_ = 0;
}

const det::ExactSum& BinnedSquares::sum() {
  if (pending_ != 0) flush();
  return sum_;
}

}  // namespace sb
