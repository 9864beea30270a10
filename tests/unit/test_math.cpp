// samebits math (samebits/det/math.hpp): special values bit for bit, and each function's error
// against MPFR's correctly rounded value over ~10^6 inputs spread over the whole float range,
// asserting the contract's bounds (exp, log ≤ 1 ULP; tanh, erf, sin, cos, cos_2pi ≤ 2 ULP).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "support/math_reference.hpp"

namespace {

using sb::test::bits_of_f32;
using sb::test::f32_of_bits;
using sb::test::MathFn;

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = f32_of_bits(0x7fc00000u);     // the canonical quiet NaN
const float kSNaN = f32_of_bits(0x7f800001u);    // signalling, payload 1
const float kNegNaN = f32_of_bits(0xffc12345u);  // negative, with a payload
constexpr float kMin = 0x1p-149f;                // smallest subnormal
constexpr float kMax = 0x1.fffffep127f;          // largest finite

std::string hex_of(float x) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%a (0x%08x)", static_cast<double>(x), bits_of_f32(x));
  return buf;
}

struct Case {
  MathFn f;
  float x;
  float want;  // compared bit for bit; every NaN result must be the canonical 0x7fc00000
};

void check_cases(const Case* cases, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const Case& c = cases[i];
    const float got = sb::test::math_eval(c.f, c.x);
    INFO(sb::test::math_name(c.f), "(", hex_of(c.x), ") = ", hex_of(got), ", want ", hex_of(c.want));
    CHECK(bits_of_f32(got) == bits_of_f32(c.want));
  }
}

}  // namespace

TEST_CASE("math: special values, bit for bit") {
  const Case cases[] = {
      // exp: limits, overflow and underflow thresholds, tiny arguments
      {MathFn::exp, 0.0f, 1.0f},
      {MathFn::exp, -0.0f, 1.0f},
      {MathFn::exp, kInf, kInf},
      {MathFn::exp, -kInf, 0.0f},
      {MathFn::exp, kNaN, kNaN},
      {MathFn::exp, kSNaN, kNaN},
      {MathFn::exp, kNegNaN, kNaN},
      {MathFn::exp, kMin, 1.0f},
      {MathFn::exp, -kMin, 1.0f},
      {MathFn::exp, 0x1.62e430p6f, kInf},  // first float with e^x ≥ 2^128·(1 − 2^-25)
      {MathFn::exp, kMax, kInf},
      {MathFn::exp, -104.0f, 0.0f},
      {MathFn::exp, -kMax, 0.0f},
      {MathFn::exp, -103.0f, kMin},                    // e^-103 = 0.88·2^-149 rounds up to the smallest subnormal
      {MathFn::exp, 0x1.62e42ep6f, 0x1.ffff08p+127f},  // last finite result
      {MathFn::exp, 1.0f, 0x1.5bf0a8p+1f},
      // log
      {MathFn::log, 0.0f, -kInf},
      {MathFn::log, -0.0f, -kInf},
      {MathFn::log, 1.0f, 0.0f},
      {MathFn::log, kInf, kInf},
      {MathFn::log, -kInf, kNaN},
      {MathFn::log, -1.0f, kNaN},
      {MathFn::log, -kMin, kNaN},
      {MathFn::log, kNaN, kNaN},
      {MathFn::log, kSNaN, kNaN},
      {MathFn::log, kNegNaN, kNaN},
      {MathFn::log, kMin, -0x1.9d1da0p+6f},  // −149·ln2
      {MathFn::log, 2.0f, 0x1.62e430p-1f},
      // tanh: odd, saturates to ±1, tanh x = x for tiny x
      {MathFn::tanh, 0.0f, 0.0f},
      {MathFn::tanh, -0.0f, -0.0f},
      {MathFn::tanh, kInf, 1.0f},
      {MathFn::tanh, -kInf, -1.0f},
      {MathFn::tanh, kNaN, kNaN},
      {MathFn::tanh, kSNaN, kNaN},
      {MathFn::tanh, kNegNaN, kNaN},
      {MathFn::tanh, kMin, kMin},
      {MathFn::tanh, -kMin, -kMin},
      {MathFn::tanh, 0x1p-13f, 0x1p-13f},
      {MathFn::tanh, 10.0f, 1.0f},
      {MathFn::tanh, -kMax, -1.0f},
      // erf: odd, saturates to ±1
      {MathFn::erf, 0.0f, 0.0f},
      {MathFn::erf, -0.0f, -0.0f},
      {MathFn::erf, kInf, 1.0f},
      {MathFn::erf, -kInf, -1.0f},
      {MathFn::erf, kNaN, kNaN},
      {MathFn::erf, kSNaN, kNaN},
      {MathFn::erf, kNegNaN, kNaN},
      {MathFn::erf, kMin, kMin},  // 2/√π·2^-149 rounds to 2^-149
      {MathFn::erf, -kMin, -kMin},
      {MathFn::erf, 4.0f, 1.0f},
      {MathFn::erf, -kMax, -1.0f},
      // sin, cos: odd/even, NaN for infinities, exact for tiny arguments
      {MathFn::sin, 0.0f, 0.0f},
      {MathFn::sin, -0.0f, -0.0f},
      {MathFn::sin, kInf, kNaN},
      {MathFn::sin, -kInf, kNaN},
      {MathFn::sin, kNaN, kNaN},
      {MathFn::sin, kSNaN, kNaN},
      {MathFn::sin, kNegNaN, kNaN},
      {MathFn::sin, kMin, kMin},
      {MathFn::sin, -kMin, -kMin},
      {MathFn::sin, 0x1p-13f, 0x1p-13f},
      {MathFn::sin, kMax, -0x1.0b3366p-1f},  // correctly rounded (MPFR), needs exact reduction
      {MathFn::cos, 0.0f, 1.0f},
      {MathFn::cos, -0.0f, 1.0f},
      {MathFn::cos, kInf, kNaN},
      {MathFn::cos, kNaN, kNaN},
      {MathFn::cos, kSNaN, kNaN},
      {MathFn::cos, kNegNaN, kNaN},
      {MathFn::cos, kMin, 1.0f},
      {MathFn::cos, 0x1p-13f, 1.0f},
      {MathFn::cos, kMax, 0x1.b4bf2cp-1f},
      // cos_2pi: exact at quarter turns (zeros are +0), even
      {MathFn::cos_2pi, 1.0f, 1.0f},
      {MathFn::cos_2pi, 0.5f, -1.0f},
      {MathFn::cos_2pi, 0.25f, 0.0f},
      {MathFn::cos_2pi, 0.75f, 0.0f},
      {MathFn::cos_2pi, -0.25f, 0.0f},
      {MathFn::cos_2pi, 0.125f, 0x1.6a09e6p-1f},
      {MathFn::cos_2pi, kMin, 1.0f},
      {MathFn::cos_2pi, 0x1p30f, 1.0f},
      {MathFn::cos_2pi, kInf, kNaN},
      {MathFn::cos_2pi, kNaN, kNaN},
      {MathFn::cos_2pi, kSNaN, kNaN},
      {MathFn::cos_2pi, kNegNaN, kNaN},
  };
  check_cases(cases, sizeof cases / sizeof cases[0]);
}

TEST_CASE("math: odd and even symmetry, bit for bit") {
  sb::test::SplitMix64 rng{17};
  for (int i = 0; i < 100000; ++i) {
    const float x = f32_of_bits(static_cast<uint32_t>(rng.next()) & 0x7fffffffu);
    if (std::isnan(x)) continue;
    INFO("x = ", x);
    CHECK(bits_of_f32(sb::det::tanh(-x)) == (bits_of_f32(sb::det::tanh(x)) ^ 0x80000000u));
    CHECK(bits_of_f32(sb::det::erf(-x)) == (bits_of_f32(sb::det::erf(x)) ^ 0x80000000u));
    CHECK(bits_of_f32(sb::det::cos(-x)) == bits_of_f32(sb::det::cos(x)));
    CHECK(bits_of_f32(sb::det::cos_2pi(-x)) == bits_of_f32(sb::det::cos_2pi(x)));
    if (!std::isinf(x)) {
      CHECK(bits_of_f32(sb::det::sin(-x)) == (bits_of_f32(sb::det::sin(x)) ^ 0x80000000u));
    }
  }
}

TEST_CASE("math: ULP error against MPFR, ~10^6 inputs per function") {
  for (MathFn f : sb::test::kMathFns) {
    const sb::test::UlpSweep s = sb::test::math_ulp_sweep(f, 1u << 19, 1u << 19, 0x5eedull);
    sb::test::print_sweep(f, s);
    INFO(sb::test::math_name(f), ": max ", s.max_ulp, " ULP at x = ", s.worst_input);
    CHECK(s.count >= 1000000u);
    CHECK(s.max_ulp <= sb::test::math_ulp_bound(f));
  }
}
