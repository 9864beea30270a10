// selftest_exact_sum: order, partition and serialization invariance of ExactSum on ill-conditioned
// data (wide exponents, cancellation, subnormals), and known answers that catch double rounding,
// ties and the signed-zero rule. (The comparison with MPFR is in tests/unit/test_exact_sum.cpp.)
#include <cstdint>
#include <string>
#include <vector>

#include "samebits/det/bits.hpp"
#include "samebits/det/exact_sum.hpp"
#include "samebits/det/selftest.hpp"

namespace sb::det {
namespace {

// A deterministic ill-conditioned set: doubles over the whole exponent range, cancelling pairs.
std::vector<double> spread_values(size_t n) {
  std::vector<double> xs;
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t exponent = (state >> 11) % 2046;  // biased, 0 = subnormals
    const uint64_t bits = (state & 0x800FFFFFFFFFFFFFull) | (exponent << 52);
    xs.push_back(double_of_bits(bits));
    if (i % 3 == 0) xs.push_back(-xs.back());
  }
  return xs;
}

}  // namespace

SelftestResult selftest_exact_sum() {
  const std::vector<double> xs = spread_values(30000);
  ExactSum forward, backward, strided[7], all;
  for (double x : xs) forward.add(x);
  for (size_t i = xs.size(); i-- > 0;) backward.add(xs[i]);
  for (size_t i = 0; i < xs.size(); ++i) strided[(i * 5) % 7].add(xs[i]);
  for (int p = 6; p >= 0; --p) all.merge(strided[p]);
  int64_t words[4][ExactSum::kWords];
  forward.to_words(words[0]);
  backward.to_words(words[1]);
  all.to_words(words[2]);
  ExactSum::from_words(words[2]).to_words(words[3]);
  bool invariant = true;
  for (int v = 1; v < 4; ++v) {
    for (int j = 0; j < ExactSum::kWords; ++j) invariant = invariant && words[v][j] == words[0][j];
  }
  invariant = invariant && bits_of(forward.to_f64()) == bits_of(all.to_f64());

  auto sum = [](std::initializer_list<double> values) {
    ExactSum s;
    for (double x : values) s.add(x);
    return s;
  };
  const bool known = sum({1e308, 1.0, -1e308}).to_f64() == 1.0 &&
                     sum({1.0, 0x1p-24, 0x1p-60}).to_f32() == 1.0f + 0x1p-23f &&  // no double rounding
                     sum({1.0 + 0x1p-52, 0x1p-53}).to_f64() == 1.0 + 0x1p-51 &&   // tie to even
                     bits_of(sum({-0.0, -0.0}).to_f64()) == bits_of(-0.0) &&
                     bits_of(sum({-1.0, 1.0}).to_f64()) == bits_of(0.0) &&
                     sum({0x1p-1074, 0x1p-1074}).to_f64() == 0x1p-1073;
  return {"exact_sum", invariant && known,
          std::to_string(xs.size()) +
              " fp64 values over the whole range: forward, backward, 7-part "
              "merge and serialized words " +
              (invariant ? "identical" : "DIFFER") +
              "; known answers (cancellation, single rounding, ties, -0, subnormals) " + (known ? "ok" : "WRONG")};
}

}  // namespace sb::det
