// ExactSum: the superaccumulator of docs/CONTRACT.md rule 5. Sums fp32 and fp64 values exactly over
// the whole fp64 range (subnormals included) and rounds once, to nearest with ties to even. Any
// order, any partition into merged parts, host or device: the same bits
// (tests/unit/test_exact_sum).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "samebits/det/bits.hpp"
#include "samebits/det/digits.hpp"
#include "samebits/det/hd.hpp"

namespace sb::det {

// The exact value is Σ limb[j]·2^(32j - 1074): digit j holds bits [32j, 32j+32) above the smallest
// fp64 subnormal. A double spans at most 3 digits; the largest lands in digits 63..65, and digit 65
// (the top, signed) absorbs every carry, so sums of up to 2^40 values of any size are exact.
//
// Signed zero (IEEE addition's rule, made order-free): an exact zero sum is -0 when every value
// added was -0, else +0; the empty sum is +0. Inf/NaN: NaN when any NaN or both +Inf and -Inf were
// added (the canonical quiet NaN: the payload is not kept), else ±Inf when one was added.
class ExactSum {
 public:
  static constexpr int kLimbs = 66;
  static constexpr int kLsbExponent = -1074;
  // Adds between two carry propagations: each add moves a limb by < 2^32, so a limb stays below
  // (kMaxPending + 2)·2^32 < 2^63.
  static constexpr int64_t kMaxPending = int64_t{1} << 30;
  // to_words / from_words: limbs, then the counts; see to_words.
  static constexpr int kWords = kLimbs + 5;

  SB_HD ExactSum() { clear(); }

  SB_HD void clear() {
    for (int j = 0; j < kLimbs; ++j) limb_[j] = 0;
    values_ = not_neg_zero_ = nan_ = pos_inf_ = neg_inf_ = 0;
    pending_ = 0;
  }

  SB_HD void add(double x) {
    const uint64_t bits = bits_of(x);
    tally(bits == 0x8000000000000000ull);
    const uint64_t biased = (bits >> 52) & 0x7FF;
    if (biased == 0x7FF) return special((bits & 0xFFFFFFFFFFFFFull) != 0, (bits >> 63) != 0);
    // |x| = m·2^(e), e = biased - 1075 (normal) or -1074 (subnormal): bit position pos = e + 1074.
    const uint64_t frac = bits & 0xFFFFFFFFFFFFFull;
    const uint64_t m = biased != 0 ? (frac | (1ull << 52)) : frac;
    const int pos = biased != 0 ? static_cast<int>(biased) - 1 : 0;
    const int k = pos >> 5, s = pos & 31;
    const int64_t sign = -static_cast<int64_t>(bits >> 63);  // 0 or -1
    add_digit(k, (m << s) & digits::kDigitMask, sign);
    add_digit(k + 1, (m >> (32 - s)) & digits::kDigitMask, sign);
    add_digit(k + 2, (m >> 32) >> (32 - s), sign);
    bump();
  }

  SB_HD void add(float x) {
    const uint32_t bits = bits_of(x);
    tally(bits == 0x80000000u);
    const uint32_t biased = (bits >> 23) & 0xFF;
    if (biased == 0xFF) return special((bits & 0x7FFFFF) != 0, (bits >> 31) != 0);
    // |x| = m·2^e, e = biased - 150 (normal) or -149 (subnormal): position e + 1074 >= 925.
    const uint64_t frac = bits & 0x7FFFFF;
    const uint64_t m = biased != 0 ? (frac | (1u << 23)) : frac;
    const int pos = (biased != 0 ? static_cast<int>(biased) - 1 : 0) + 925;
    const int k = pos >> 5, s = pos & 31;
    const int64_t sign = -static_cast<int64_t>(bits >> 31);
    const uint64_t v = m << s;  // < 2^55: two digits
    add_digit(k, v & digits::kDigitMask, sign);
    add_digit(k + 1, v >> 32, sign);
    bump();
  }

  // Σ x[i], i < n, in any order (x: (n)).
  SB_HD void add(const float* x, size_t n) {
    for (size_t i = 0; i < n; ++i) add(x[i]);
  }
  SB_HD void add(const double* x, size_t n) {
    for (size_t i = 0; i < n; ++i) add(x[i]);
  }

  // this += other: limb-wise integer addition, so merging is associative and commutative.
  SB_HD void merge(const ExactSum& other) {
    if (pending_ + other.pending_ + 1 > kMaxPending) normalize();
    for (int j = 0; j < kLimbs; ++j) limb_[j] += other.limb_[j];
    values_ += other.values_;
    not_neg_zero_ += other.not_neg_zero_;
    nan_ += other.nan_;
    pos_inf_ += other.pos_inf_;
    neg_inf_ += other.neg_inf_;
    pending_ += other.pending_ + 1;
    if (pending_ > kMaxPending) normalize();
  }

  // Carry propagation to the canonical limbs (a function of the exact value only).
  SB_HD void normalize() {
    digits::canonicalize(limb_, kLimbs, 1);
    pending_ = 0;
  }

  SB_HD double to_f64() const {
    uint64_t bits = 0;
    if (special_bits(&bits, 0x7FF8000000000000ull, 0x7FF0000000000000ull, 63)) {
      return double_of_bits(bits);
    }
    int64_t scratch[kLimbs];
    if (!canonical_copy(scratch)) return double_of_bits(zero_sign() << 63);
    return double_of_bits(digits::round_to_bits<kLimbs>(scratch, kLsbExponent, digits::kBinary64));
  }

  // Rounded once from the exact value (not via fp64, which would round twice).
  SB_HD float to_f32() const {
    uint64_t bits = 0;
    if (special_bits(&bits, 0x7FC00000u, 0x7F800000u, 31)) {
      return float_of_bits(static_cast<uint32_t>(bits));
    }
    int64_t scratch[kLimbs];
    if (!canonical_copy(scratch)) return float_of_bits(static_cast<uint32_t>(zero_sign() << 31));
    return float_of_bits(
        static_cast<uint32_t>(digits::round_to_bits<kLimbs>(scratch, kLsbExponent, digits::kBinary32)));
  }

  // Serialization for merging across ranks (words: (kWords)): the canonical limbs, then the counts
  // of values, of values other than -0, of NaNs, of +Infs and of -Infs. Every word is additive,
  // so an MPI_INT64_T SUM all-reduce of the words of R <= 2^30 ranks gives the words of the merged
  // sum; from_words accepts that.
  SB_HD void to_words(int64_t* words) const {
    for (int j = 0; j < kLimbs; ++j) words[j] = limb_[j];
    digits::canonicalize(words, kLimbs, 1);
    words[kLimbs + 0] = values_;
    words[kLimbs + 1] = not_neg_zero_;
    words[kLimbs + 2] = nan_;
    words[kLimbs + 3] = pos_inf_;
    words[kLimbs + 4] = neg_inf_;
  }

  SB_HD static ExactSum from_words(const int64_t* words) {
    ExactSum s;
    for (int j = 0; j < kLimbs; ++j) s.limb_[j] = words[j];
    s.values_ = words[kLimbs + 0];
    s.not_neg_zero_ = words[kLimbs + 1];
    s.nan_ = words[kLimbs + 2];
    s.pos_inf_ = words[kLimbs + 3];
    s.neg_inf_ = words[kLimbs + 4];
    s.normalize();
    return s;
  }

  SB_HD int64_t count() const { return values_; }
  SB_HD bool is_finite() const { return nan_ == 0 && pos_inf_ == 0 && neg_inf_ == 0; }
  SB_HD int64_t nans() const { return nan_; }                 // NaNs added
  SB_HD int64_t infs() const { return pos_inf_ + neg_inf_; }  // ±Infs added

 private:
  SB_HD void tally(bool neg_zero) {
    values_ += 1;
    not_neg_zero_ += neg_zero ? 0 : 1;
  }

  SB_HD void special(bool is_nan, bool negative) {
    nan_ += is_nan ? 1 : 0;
    pos_inf_ += (!is_nan && !negative) ? 1 : 0;
    neg_inf_ += (!is_nan && negative) ? 1 : 0;
  }

  // limb[k] += ±d, d < 2^32 (sign: 0 for +, -1 for -).
  SB_HD void add_digit(int k, uint64_t d, int64_t sign) { limb_[k] += (static_cast<int64_t>(d) ^ sign) - sign; }

  SB_HD void bump() {
    if (++pending_ >= kMaxPending) normalize();
  }

  // NaN / ±Inf results; false when every value was finite.
  SB_HD bool special_bits(uint64_t* bits, uint64_t nan, uint64_t inf, int sign_shift) const {
    if (nan_ != 0 || (pos_inf_ != 0 && neg_inf_ != 0)) {
      *bits = nan;
    } else if (pos_inf_ != 0) {
      *bits = inf;
    } else if (neg_inf_ != 0) {
      *bits = inf | (1ull << sign_shift);
    } else {
      return false;
    }
    return true;
  }

  // The canonical limbs into scratch; false when the exact sum is zero.
  SB_HD bool canonical_copy(int64_t* scratch) const {
    for (int j = 0; j < kLimbs; ++j) scratch[j] = limb_[j];
    digits::canonicalize(scratch, kLimbs, 1);
    for (int j = 0; j < kLimbs; ++j) {
      if (scratch[j] != 0) return true;
    }
    return false;
  }

  // 1 when an exact zero sum is -0 (some values, all of them -0), else 0.
  SB_HD uint64_t zero_sign() const { return (values_ > 0 && not_neg_zero_ == 0) ? 1 : 0; }

  int64_t limb_[kLimbs];  // (kLimbs) carry-save digits, limb j weighs 2^(32j - 1074)
  int64_t values_, not_neg_zero_, nan_, pos_inf_, neg_inf_;
  int64_t pending_;  // adds (and merges) since the last carry propagation
};

}  // namespace sb::det
