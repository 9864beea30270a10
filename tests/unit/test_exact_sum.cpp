// ExactSum (docs/CONTRACT.md rule 5): order and partition invariance, bitwise; the correctly rounded
// result against an MPFR exact reference on ill-conditioned sums; the special-value rules.
#include <doctest/doctest.h>
#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "samebits/det/bits.hpp"
#include "samebits/det/exact_sum.hpp"

using sb::det::bits_of;
using sb::det::ExactSum;

namespace {

// The exact sum in MPFR (2400 bits hold any sum of < 2^300 finite doubles), rounded once to a
// format of precision p whose smallest normal is 2^emin_normal, with its subnormals.
class MpfrSum {
 public:
  MpfrSum() {
    mpfr_init2(acc_, 2400);
    mpfr_set_zero(acc_, 1);
  }
  ~MpfrSum() { mpfr_clear(acc_); }
  MpfrSum(const MpfrSum&) = delete;
  MpfrSum& operator=(const MpfrSum&) = delete;

  void add(double x) { REQUIRE(mpfr_add_d(acc_, acc_, x, MPFR_RNDN) == 0); }

  double to_f64() {
    return round<double>(53, -1022, [](mpfr_ptr r) { return mpfr_get_d(r, MPFR_RNDN); });
  }
  float to_f32() {
    return round<float>(24, -126, [](mpfr_ptr r) { return mpfr_get_flt(r, MPFR_RNDN); });
  }

 private:
  template <class T>
  T round(int p, int emin_normal, T (*get)(mpfr_ptr)) {
    if (mpfr_zero_p(acc_)) return T(0);
    const long msb = static_cast<long>(mpfr_get_exp(acc_)) - 1;  // |acc| in [2^msb, 2^(msb+1))
    long prec = msb >= emin_normal ? p : p - (emin_normal - msb);
    const int sign = mpfr_sgn(acc_) < 0 ? -1 : 1;
    if (prec < 1) {
      // Below the smallest subnormal s = 2^(emin_normal - p + 1): 0 or ±s, ties (|acc| = s/2) to 0.
      const T s = std::ldexp(T(1), emin_normal - p + 1);
      mpfr_t half;
      mpfr_init2(half, 64);
      mpfr_set_d(half, static_cast<double>(s) / 2, MPFR_RNDN);
      const int cmp = mpfr_cmpabs(acc_, half);
      mpfr_clear(half);
      return cmp > 0 ? T(sign) * s : T(sign) * T(0);
    }
    mpfr_t r;
    mpfr_init2(r, prec);
    mpfr_set(r, acc_, MPFR_RNDN);
    const T out = get(r);  // r is representable (or beyond the largest finite: ±Inf)
    mpfr_clear(r);
    return out;
  }

  mpfr_t acc_;
};

uint64_t f64_bits(double x) { return bits_of(x); }
uint32_t f32_bits(float x) { return bits_of(x); }

double sum_f64(const std::vector<double>& xs) {
  ExactSum s;
  for (double x : xs) s.add(x);
  return s.to_f64();
}

// A double with a random 53-bit mantissa and an exponent uniform in [lo, hi], random sign.
double random_double(std::mt19937_64& rng, int lo, int hi) {
  std::uniform_int_distribution<int> exp(lo, hi);
  const double m = static_cast<double>((rng() >> 11) | (1ull << 52));  // [2^52, 2^53)
  const double x = std::ldexp(m, exp(rng) - 52);
  return (rng() & 1) ? -x : x;
}

// ExactSum and MPFR agree on both roundings, and every order and partition gives the same bits.
void check_against_mpfr(std::vector<double> xs, std::mt19937_64& rng) {
  MpfrSum ref;
  ExactSum s;
  for (double x : xs) {
    ref.add(x);
    s.add(x);
  }
  const double want64 = ref.to_f64();
  const float want32 = ref.to_f32();
  CHECK(f64_bits(s.to_f64()) == f64_bits(want64));
  CHECK(f32_bits(s.to_f32()) == f32_bits(want32));
  std::shuffle(xs.begin(), xs.end(), rng);
  CHECK(f64_bits(sum_f64(xs)) == f64_bits(want64));
}

}  // namespace

TEST_CASE("exact sum: zero, signed zero, Inf and NaN rules") {
  auto sum = [](std::initializer_list<double> xs) {
    ExactSum s;
    for (double x : xs) s.add(x);
    return s;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(f64_bits(ExactSum().to_f64()) == f64_bits(0.0));
  CHECK(f32_bits(ExactSum().to_f32()) == f32_bits(0.0f));
  CHECK(f64_bits(sum({-0.0}).to_f64()) == f64_bits(-0.0));
  CHECK(f32_bits(sum({-0.0, -0.0}).to_f32()) == f32_bits(-0.0f));
  CHECK(f64_bits(sum({-0.0, 0.0}).to_f64()) == f64_bits(0.0));
  CHECK(f64_bits(sum({1.0, -1.0}).to_f64()) == f64_bits(0.0));
  CHECK(f64_bits(sum({-1.0, -0.0, 1.0}).to_f64()) == f64_bits(0.0));
  CHECK(f64_bits(sum({inf, 1.0}).to_f64()) == f64_bits(inf));
  CHECK(f32_bits(sum({-inf, 1e300}).to_f32()) == f32_bits(-std::numeric_limits<float>::infinity()));
  CHECK(f64_bits(sum({inf, -inf}).to_f64()) == 0x7FF8000000000000ull);
  CHECK(f32_bits(sum({nan, 1.0}).to_f32()) == 0x7FC00000u);
  CHECK(f64_bits(sum({-nan, inf}).to_f64()) == 0x7FF8000000000000ull);
  CHECK_FALSE(sum({inf}).is_finite());
  CHECK(sum({1.0, -0.0, inf}).count() == 3);
  // -0 added as a float counts the same as -0 as a double.
  ExactSum f;
  f.add(-0.0f);
  CHECK(f32_bits(f.to_f32()) == f32_bits(-0.0f));
}

TEST_CASE("exact sum: known answers") {
  const double max = std::numeric_limits<double>::max();
  const double tiny = std::numeric_limits<double>::denorm_min();
  CHECK(sum_f64({1e308, 1.0, -1e308}) == 1.0);
  CHECK(sum_f64({max, max, -max}) == max);
  CHECK(std::isinf(sum_f64({max, max})));
  CHECK(sum_f64({tiny, tiny, tiny}) == 3 * tiny);
  CHECK(sum_f64({max, tiny, -max}) == tiny);
  // Ties to even: 1 + 2^-53 -> 1; (1 + 2^-52) + 2^-53 -> 1 + 2^-51; a sticky bit breaks the tie.
  CHECK(sum_f64({1.0, 0x1p-53}) == 1.0);
  CHECK(sum_f64({1.0 + 0x1p-52, 0x1p-53}) == 1.0 + 0x1p-51);
  CHECK(sum_f64({1.0, 0x1p-53, tiny}) == 1.0 + 0x1p-52);
  // Rounded once: via fp64, 1 + 2^-24 + 2^-60 would round to 1 + 2^-24, then tie to 1.0f.
  ExactSum s;
  for (double x : {1.0, 0x1p-24, 0x1p-60}) s.add(x);
  CHECK(s.to_f64() == 1.0 + 0x1p-24);
  CHECK(s.to_f32() == 1.0f + 0x1p-23f);
  // Floats: the largest float plus half its ulp rounds to Inf; plus less stays.
  ExactSum big;
  big.add(std::numeric_limits<float>::max());
  big.add(0x1p103f);
  CHECK(std::isinf(big.to_f32()));
  ExactSum below;
  below.add(std::numeric_limits<float>::max());
  below.add(0x1p102f);
  CHECK(below.to_f32() == std::numeric_limits<float>::max());
  // fp32 subnormals: half the smallest rounds to 0 (even), a bit more rounds up.
  ExactSum sub;
  sub.add(0x1p-150);
  CHECK(f32_bits(sub.to_f32()) == 0u);
  sub.add(0x1p-200);
  CHECK(f32_bits(sub.to_f32()) == 1u);
  ExactSum neg_sub;
  neg_sub.add(-0x1p-160);
  CHECK(f32_bits(neg_sub.to_f32()) == f32_bits(-0.0f));
}

TEST_CASE("exact sum equals MPFR: massive cancellation") {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<double> xs;
    for (int i = 0; i < 300; ++i) {
      const double x = random_double(rng, -200, 300);
      xs.push_back(x);
      xs.push_back(-x);
    }
    for (int i = 0; i < 5; ++i) xs.push_back(random_double(rng, -1074 + 60, -900));
    // Near-cancelling values whose sum is far below every addend.
    const double big = random_double(rng, 900, 1000);
    xs.push_back(big);
    xs.push_back(-big * (1 - 0x1p-52));
    check_against_mpfr(xs, rng);
  }
}

TEST_CASE("exact sum equals MPFR: wide exponent spread and subnormals") {
  std::mt19937_64 rng(12);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<double> xs;
    for (int i = 0; i < 500; ++i) xs.push_back(random_double(rng, -1074 + 52, 1015));
    for (int i = 0; i < 50; ++i) {
      xs.push_back(std::ldexp(static_cast<double>(rng() >> 12), -1074) * ((rng() & 1) ? -1 : 1));
    }
    check_against_mpfr(xs, rng);
  }
  for (int trial = 0; trial < 40; ++trial) {  // only subnormals and values near them
    std::vector<double> xs;
    for (int i = 0; i < 200; ++i) xs.push_back(random_double(rng, -1074 + 52, -1000));
    for (int i = 0; i < 200; ++i) {
      xs.push_back(sb::det::double_of_bits(rng() & 0x800FFFFFFFFFFFFFull));
    }
    check_against_mpfr(xs, rng);
  }
}

TEST_CASE("exact sum equals MPFR: sums exactly at rounding ties") {
  std::mt19937_64 rng(13);
  for (int trial = 0; trial < 400; ++trial) {
    // a + half an ulp of a (of fp64, then of fp32), hidden behind a cancelling pair.
    const bool f32 = trial % 2 == 1;
    const int e = std::uniform_int_distribution<int>(f32 ? -125 : -1000, f32 ? 120 : 1000)(rng);
    double a = random_double(rng, e, e);
    if (f32) a = static_cast<double>(static_cast<float>(a));  // 24-bit mantissa (no carry at e<127)
    const double half_ulp = std::ldexp(1.0, e - (f32 ? 24 : 53));
    const double big = random_double(rng, 600, 900);
    std::vector<double> xs = {big, a, std::copysign(half_ulp, (rng() & 1) ? a : -a), -big};
    if (trial % 4 >= 2) xs.push_back(std::copysign(0x1p-1074, (rng() & 1) ? 1.0 : -1.0));
    check_against_mpfr(xs, rng);
  }
}

TEST_CASE("exact sum of fp32 values equals MPFR") {
  std::mt19937_64 rng(14);
  std::uniform_int_distribution<uint32_t> any_finite(0, 0x7F7FFFFF);
  for (int trial = 0; trial < 50; ++trial) {
    MpfrSum ref;
    ExactSum s;
    for (int i = 0; i < 1000; ++i) {
      // Mostly the whole float range, some subnormals, some cancelling pairs.
      uint32_t bits = any_finite(rng);
      if (i % 10 == 0) bits &= 0x007FFFFF;
      bits |= (rng() & 1) ? 0x80000000u : 0u;
      const float x = sb::det::float_of_bits(bits);
      ref.add(x);
      s.add(x);
      if (i % 7 == 0) {
        ref.add(-x);
        s.add(-x);
      }
    }
    CHECK(f32_bits(s.to_f32()) == f32_bits(ref.to_f32()));
    CHECK(f64_bits(s.to_f64()) == f64_bits(ref.to_f64()));
  }
}

TEST_CASE("exact sum: permutations, partitions, merge trees and words give identical bits") {
  std::mt19937_64 rng(15);
  std::vector<double> xs;
  for (int i = 0; i < 20000; ++i) xs.push_back(random_double(rng, -1074 + 52, 1000));
  for (int i = 0; i < 2000; ++i) xs.push_back(-xs[i]);
  for (int i = 0; i < 100; ++i) xs.push_back(-0.0);
  std::vector<float> fs;
  for (int i = 0; i < 5000; ++i) fs.push_back(static_cast<float>(random_double(rng, -140, 120)));

  auto words_of = [](const ExactSum& s) {
    std::vector<int64_t> w(ExactSum::kWords);
    s.to_words(w.data());
    return w;
  };
  ExactSum seq;
  for (double x : xs) seq.add(x);
  seq.add(fs.data(), fs.size());
  const std::vector<int64_t> want = words_of(seq);

  for (int trial = 0; trial < 8; ++trial) {
    std::shuffle(xs.begin(), xs.end(), rng);
    std::shuffle(fs.begin(), fs.end(), rng);
    // Random partition into parts, merged in a random tree.
    const int parts = 1 + static_cast<int>(rng() % 16);
    std::vector<ExactSum> part(parts);
    for (double x : xs) part[rng() % parts].add(x);
    for (float x : fs) part[rng() % parts].add(x);
    while (part.size() > 1) {
      const size_t a = rng() % part.size();
      size_t b = rng() % (part.size() - 1);
      if (b >= a) ++b;
      part[a].merge(part[b]);
      part.erase(part.begin() + static_cast<std::ptrdiff_t>(b));
    }
    CHECK(words_of(part[0]) == want);
    CHECK(f64_bits(part[0].to_f64()) == f64_bits(seq.to_f64()));
    CHECK(f32_bits(part[0].to_f32()) == f32_bits(seq.to_f32()));
  }

  // An int64 SUM all-reduce of the ranks' words, then from_words: the same sum.
  const int ranks = 5;
  std::vector<ExactSum> rank(ranks);
  for (size_t i = 0; i < xs.size(); ++i) rank[i % ranks].add(xs[i]);
  for (size_t i = 0; i < fs.size(); ++i) rank[(i * 7) % ranks].add(fs[i]);
  std::vector<int64_t> reduced(ExactSum::kWords, 0);
  for (const ExactSum& r : rank) {
    const std::vector<int64_t> w = words_of(r);
    for (int j = 0; j < ExactSum::kWords; ++j) reduced[j] += w[j];
  }
  const ExactSum all = ExactSum::from_words(reduced.data());
  CHECK(words_of(all) == want);
  CHECK(f64_bits(all.to_f64()) == f64_bits(seq.to_f64()));
}

TEST_CASE("exact sum: carry propagation keeps the canonical words") {
  // Many large same-sign values make every limb carry; normalize in between changes nothing.
  ExactSum a, b;
  std::mt19937_64 rng(16);
  for (int i = 0; i < 100000; ++i) {
    const double x = random_double(rng, 1000, 1023) * 0.25;
    a.add(std::fabs(x));
    b.add(std::fabs(x));
    if (i % 1000 == 0) b.normalize();
  }
  std::vector<int64_t> wa(ExactSum::kWords), wb(ExactSum::kWords);
  a.to_words(wa.data());
  b.to_words(wb.data());
  CHECK(wa == wb);
  for (int j = 0; j + 1 < ExactSum::kLimbs; ++j) {
    CHECK(wa[j] >= 0);
    CHECK(wa[j] < (int64_t{1} << 32));
  }
  CHECK(std::isinf(a.to_f64()));  // 10^5 values near 2^1021 overflow fp64
}
