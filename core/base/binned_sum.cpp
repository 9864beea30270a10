// Binned exact sums (exact_norm.hpp): Σ x and Σ x² over fp32 arrays added as integers (one bin
// per fp32 exponent; Σ x² mostly in one fixed-point frame per block), then into a det::ExactSum
// once per block — the exact value of a plain ExactSum of the same terms (canonical limbs equal).
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
  for (int e = 0; e < 255; ++e)
    add_square_bin(sum, e, bins[0][e] + bins[1][e] + bins[2][e] + bins[3][e]);
  // NaN and ±Inf (exponent 255; m ≠ 0 for both): the ExactSum's own rules.
  if ((bins[0][255] | bins[1][255] | bins[2][255] | bins[3][255]) != 0) {
    for (size_t i = 0; i < n; ++i) {
      if (((det::bits_of(x[i]) >> 23) & 0xFFu) == 0xFFu) sum.add(exact_square(x[i]));
    }
  }
}

// One block's Σ x² (n ≤ kBinnedBlock) into sum. Every square x² = m²·2^(2·s − 300), s = max(e, 1),
// whose scale s lies in the 32 binades [base, base + 31] that end at the block's largest is the
// 48-bit m² shifted left by 2·(s − base) ≤ 62 bits: t < 2^110 in units of 2^(2·base − 300). Its
// 32-bit digits 0 and 1 and its bits from 64 up are summed in three uint64 (≤ 2^16 terms: below
// 2^48, 2^48 and 2^62, no carries), a flat loop of sums the compiler vectorizes. The squares below
// the window (|x| under 2^-31 of the block's largest: rare) and NaN/±Inf take the bins. Integer
// sums of the same terms: the same exact value as the bins alone, on any build.
void add_block_squares(det::ExactSum& sum, const float* x, size_t n) {
  uint32_t top = 0;
  for (size_t i = 0; i < n; ++i) top = std::max(top, (det::bits_of(x[i]) >> 23) & 0xFFu);
  if (top == 0xFFu) return add_square_bins(sum, x, n, 256);  // NaN or ±Inf: every element binned
  const int base = static_cast<int>(std::max(top, 1u)) - 31;
  uint64_t digit0 = 0, digit1 = 0, upper = 0, below = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t b = det::bits_of(x[i]);
    const uint32_t e = (b >> 23) & 0xFFu;
    const uint32_t m = (b & 0x7FFFFFu) | (((e + 0xFFu) & 0x100u) << 15);  // implicit bit if e ≠ 0
    const int64_t d = static_cast<int64_t>(std::max(e, 1u)) - base;      // <= 31
    const uint64_t keep = ~static_cast<uint64_t>(d >> 63);  // all ones inside the window, else 0
    const uint64_t m64 = m & keep;                          // (64-bit lanes: vpmuludq)
    const uint64_t sq = (m64 & 0xFFFFFFFFu) * (m64 & 0xFFFFFFFFu);  // m² < 2^48, 0 outside
    const uint64_t sh = static_cast<uint64_t>(2 * d) & keep;
    const uint64_t t_lo = sq << sh;               // t mod 2^64
    const uint64_t t_hi = (sq >> 1) >> (63 - sh);  // t / 2^64 (0 for sh = 0: sq < 2^63)
    digit0 += t_lo & 0xFFFFFFFFu;
    digit1 += t_lo >> 32;
    upper += t_hi;
    below += ~keep & ((m + 0xFFFFFFu) >> 24);  // 1 for a non-zero square below the window
  }
  // digit0 + digit1·2^32 + upper·2^64 in 32-bit pieces, each an exact double times its power of 2.
  const int unit = 2 * base - 300;
  const uint64_t piece[5] = {digit0 & 0xFFFFFFFFu, (digit0 >> 32) + (digit1 & 0xFFFFFFFFu),
                             (digit1 >> 32) + (upper & 0xFFFFFFFFu), upper >> 32, 0};
  for (int k = 0; k < 4; ++k) {
    if (piece[k] != 0) sum.add(static_cast<double>(piece[k]) * pow2(unit + 32 * k));
  }
  if (below != 0) add_square_bins(sum, x, n, static_cast<uint32_t>(base));
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

void binned_update_squares(det::ExactSum& delta_sq, det::ExactSum& weight_sq, const float* before,
                           const float* after, size_t n) {
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
