// The 32-lane row reduction (docs/CONTRACT.md rule 2): every host form (the dispatched entry points
// and each compiled SIMD form) gives the bits of the scalar definition, for lengths that are and
// are not multiples of 32, on data with subnormals, signed zeros, cancellation, Inf and NaN.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "samebits/det/bits.hpp"
#include "samebits/det/lane32.hpp"

using sb::det::bits_of;

namespace {

const size_t kLengths[] = {0, 1, 2, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100, 1000, 1024, 4097, 100003};

// Mixed data: normal values over a wide range, subnormals, ±0, near-cancelling neighbours.
std::vector<float> mixed_data(std::mt19937_64& rng, size_t n) {
  std::vector<float> x(n);
  std::uniform_int_distribution<int> exp(-30, 30);
  for (size_t i = 0; i < n; ++i) {
    const float m = static_cast<float>((rng() >> 40) | (1ull << 23));
    float v = std::ldexp(m, exp(rng) - 23);
    switch (rng() % 8) {
      case 0: v = sb::det::float_of_bits(static_cast<uint32_t>(rng() & 0x007FFFFF)); break;
      case 1: v = 0.0f; break;
      case 2: v = -0.0f; break;
      case 3: v = i > 0 ? -x[i - 1] : v; break;
      default: break;
    }
    x[i] = (rng() & 1) ? -v : v;
  }
  return x;
}

// Tiny-scale data, where the products and partial sums are subnormal.
std::vector<float> subnormal_data(std::mt19937_64& rng, size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = std::ldexp(static_cast<float>(rng() >> 40), -140 + static_cast<int>(rng() % 20));
    if (rng() & 1) x[i] = -x[i];
  }
  return x;
}

using Sum = float (*)(const float*, size_t);
using Dot = float (*)(const float*, const float*, size_t);

void check_forms(const std::vector<float>& x, const std::vector<float>& y) {
  std::vector<Sum> sums = {sb::det::lane32_sum};
  std::vector<Dot> dots = {sb::det::lane32_dot};
#if defined(SB_HAVE_AVX2)
  sums.push_back(sb::det::detail::lane32_sum_avx2);
  dots.push_back(sb::det::detail::lane32_dot_avx2);
#endif
#if defined(SB_HAVE_AVX512)
  sums.push_back(sb::det::detail::lane32_sum_avx512);
  dots.push_back(sb::det::detail::lane32_dot_avx512);
#endif
  for (size_t n : kLengths) {
    if (n > x.size()) continue;
    const uint32_t sum_ref = bits_of(sb::det::lane32_sum_ref(x.data(), n));
    const uint32_t dot_ref = bits_of(sb::det::lane32_dot_ref(x.data(), y.data(), n));
    const uint32_t sq_ref = bits_of(sb::det::lane32_dot_ref(x.data(), x.data(), n));
    for (Sum f : sums) CHECK(bits_of(f(x.data(), n)) == sum_ref);
    for (Dot f : dots) {
      CHECK(bits_of(f(x.data(), y.data(), n)) == dot_ref);
      CHECK(bits_of(f(x.data(), x.data(), n)) == sq_ref);
    }
    CHECK(bits_of(sb::det::lane32_sumsq(x.data(), n)) == sq_ref);
  }
}

}  // namespace

TEST_CASE("lane32: the definition's order (lanes, then the fixed tree) and its fma") {
  // 1 + 2^-24 is a tie that sequential summation rounds back to 1 at every step; in lanes the
  // small terms meet each other first, and the fold carries them: 1 + 31·2^-23, exactly.
  std::vector<float> x(64, 0x1p-24f);
  x[0] = 1.0f;
  CHECK(sb::det::lane32_sum_ref(x.data(), x.size()) == 1.0f + 31 * 0x1p-23f);
  CHECK(bits_of(sb::det::lane32_sum(x.data(), x.size())) == bits_of(sb::det::lane32_sum_ref(x.data(), x.size())));
  CHECK(bits_of(sb::det::lane32_sum(nullptr, 0)) == 0u);  // empty: +0
  // One fma per element: lane 0 holds -round(a·a), then fma(a, a, ·) leaves the exact error 2^-24
  // (a separate multiply and add would give 0).
  const float a = 1.0f + 0x1p-12f;
  std::vector<float> u(33, 0.0f), v(33, 0.0f);
  u[0] = -(a * a);
  v[0] = 1.0f;
  u[32] = a;
  v[32] = a;
  CHECK(sb::det::lane32_dot_ref(u.data(), v.data(), 33) == 0x1p-24f);
  CHECK(sb::det::lane32_dot(u.data(), v.data(), 33) == 0x1p-24f);
}

TEST_CASE("lane32: every form equals the scalar definition on mixed data") {
  std::mt19937_64 rng(31);
  for (int trial = 0; trial < 20; ++trial) {
    const std::vector<float> x = mixed_data(rng, 100003), y = mixed_data(rng, 100003);
    check_forms(x, y);
  }
}

TEST_CASE("lane32: every form equals the scalar definition on subnormal data") {
  std::mt19937_64 rng(32);
  for (int trial = 0; trial < 5; ++trial) {
    const std::vector<float> x = subnormal_data(rng, 100003), y = mixed_data(rng, 100003);
    check_forms(x, y);
  }
}

TEST_CASE("lane32: signed zeros, Inf and NaN") {
  std::mt19937_64 rng(33);
  std::vector<float> zeros(4097, -0.0f), ones(4097, 1.0f);
  check_forms(zeros, ones);  // every lane stays +0 (+0 + -0 = +0)
  CHECK(bits_of(sb::det::lane32_sum(zeros.data(), zeros.size())) == 0u);
  std::vector<float> x = mixed_data(rng, 4097), y = mixed_data(rng, 4097);
  for (size_t pos : {size_t{0}, size_t{31}, size_t{33}, size_t{4096}}) {
    std::vector<float> xi = x;
    xi[pos] = std::numeric_limits<float>::infinity();
    check_forms(xi, y);
    xi[pos + (pos < 4000 ? 64 : -64)] = -std::numeric_limits<float>::infinity();
    check_forms(xi, y);
    std::vector<float> xn = x;
    xn[pos] = std::numeric_limits<float>::quiet_NaN();
    check_forms(xn, y);
  }
}

TEST_CASE("lane32: continuing the lanes over consecutive ranges, cut anywhere, is the whole row's sum") {
  std::mt19937_64 rng(34);
  const std::vector<float> x = mixed_data(rng, 50257);
  const uint32_t whole = bits_of(sb::det::lane32_sum_ref(x.data(), x.size()));
  // Cuts as the vocabulary-parallel head makes them (⌈V/T⌉ rows a rank, unaligned to 32) and a few
  // more: empty ranges, ranges shorter than a lane block, one element.
  const std::vector<std::vector<size_t>> cuts = {{0, 50257},
                                                 {0, 25129, 50257},
                                                 {0, 16753, 33506, 50257},
                                                 {0, 12565, 25130, 37695, 50257},
                                                 {0, 0, 1, 31, 32, 33, 95, 50257},
                                                 {0, 50256, 50257, 50257}};
  for (const std::vector<size_t>& c : cuts) {
    float s[sb::det::kLanes] = {};
    for (size_t k = 0; k + 1 < c.size(); ++k) sb::det::lane32_continue(s, x.data() + c[k], c[k + 1] - c[k], c[k]);
    CHECK(bits_of(sb::det::lane32_fold(s)) == whole);
  }
  // A different grouping of the same elements (lanes by local index) is another sum: the global
  // index chooses the lane (on values of one magnitude, where every grouping rounds differently).
  std::vector<float> u(50257);
  std::uniform_real_distribution<float> one_two(1.0f, 2.0f);
  for (float& v : u) v = one_two(rng);
  float right[sb::det::kLanes] = {}, wrong[sb::det::kLanes] = {};
  for (size_t k : {size_t{0}, size_t{25129}}) {
    const size_t n = k == 0 ? 25129 : 50257 - 25129;
    sb::det::lane32_continue(right, u.data() + k, n, k);
    sb::det::lane32_continue(wrong, u.data() + k, n, 0);
  }
  CHECK(bits_of(sb::det::lane32_fold(right)) == bits_of(sb::det::lane32_sum_ref(u.data(), u.size())));
  CHECK(bits_of(sb::det::lane32_fold(wrong)) != bits_of(sb::det::lane32_fold(right)));
}
