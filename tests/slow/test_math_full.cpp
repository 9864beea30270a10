// samebits math (samebits/det/math.hpp), the full measurement: each function's max error against
// MPFR over 2^23 inputs strided over all 2^32 bit patterns plus 2^21 random inputs where it does
// real work, plus the edge inputs (≥ 10^7 per function). docs/MATH.md quotes these numbers.
#include <doctest/doctest.h>

#include "support/math_reference.hpp"

namespace {

void measure(sb::test::MathFn f) {
  const sb::test::UlpSweep s = sb::test::math_ulp_sweep(f, 1u << 23, 1u << 21, 0x5a3eb175ull);
  sb::test::print_sweep(f, s);
  INFO(sb::test::math_name(f), ": max ", s.max_ulp, " ULP at x = ", s.worst_input);
  CHECK(s.count >= 10000000u);
  CHECK(s.max_ulp <= sb::test::math_ulp_bound(f));
}

}  // namespace

TEST_CASE("math full sweep: exp") { measure(sb::test::MathFn::exp); }
TEST_CASE("math full sweep: log") { measure(sb::test::MathFn::log); }
TEST_CASE("math full sweep: tanh") { measure(sb::test::MathFn::tanh); }
TEST_CASE("math full sweep: erf") { measure(sb::test::MathFn::erf); }
TEST_CASE("math full sweep: sin") { measure(sb::test::MathFn::sin); }
TEST_CASE("math full sweep: cos") { measure(sb::test::MathFn::cos); }
TEST_CASE("math full sweep: cos_2pi") { measure(sb::test::MathFn::cos_2pi); }
