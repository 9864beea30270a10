// selftest_fixed_accumulator: the same leaves added in order, in reverse, and split over three
// accumulators merged in another order give identical limbs and rounded floats; the rounded sums
// equal ExactSum's; overflow and NaN are reported.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "samebits/det/bits.hpp"
#include "samebits/det/exact_sum.hpp"
#include "samebits/det/fixed_accumulator.hpp"
#include "samebits/det/selftest.hpp"

namespace sb::det {
namespace {

// Leaf l, element i: gradient-like floats of either sign with exponents 2^-77 .. 2^20.
float leaf_value(size_t l, size_t i) {
  uint64_t h = (l * 0x9E3779B97F4A7C15ull) ^ (i * 0xC2B2AE3D27D4EB4Full);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  const uint32_t exponent = 127 - 77 + static_cast<uint32_t>(h % 98);
  return float_of_bits(static_cast<uint32_t>((h >> 32) & 0x807FFFFFu) | (exponent << 23));
}

}  // namespace

SelftestResult selftest_fixed_accumulator() {
  const size_t n = 4099, leaves = 24;
  std::vector<std::vector<float>> x(leaves, std::vector<float>(n));
  for (size_t l = 0; l < leaves; ++l) {
    for (size_t i = 0; i < n; ++i) x[l][i] = l % 4 == 3 ? -x[l - 1][i] : leaf_value(l, i);
  }
  FixedAccumulator forward(n), backward(n), all(n);
  std::vector<FixedAccumulator> part(3, FixedAccumulator(n));
  for (size_t l = 0; l < leaves; ++l) {
    forward.add(x[l].data());
    backward.add(x[leaves - 1 - l].data());
    part[(l * 7) % 3].add(x[l].data());
  }
  for (int p = 2; p >= 0; --p) all.merge(part[p]);
  forward.normalize();
  backward.normalize();
  all.normalize();
  std::vector<float> a(n), b(n), c(n);
  forward.round_to_fp32(a.data());
  backward.round_to_fp32(b.data());
  all.round_to_fp32(c.data());
  bool invariant = true;
  for (size_t j = 0; j < forward.limb_count(); ++j) {
    invariant = invariant && forward.limbs()[j] == backward.limbs()[j] && forward.limbs()[j] == all.limbs()[j];
  }
  bool exact = true;
  for (size_t i = 0; i < n; ++i) {
    invariant = invariant && bits_of(a[i]) == bits_of(b[i]) && bits_of(a[i]) == bits_of(c[i]);
    if (i % 16 == 0) {  // values >= 2^-77 lie on the default window's 2^-100 grid: exact
      ExactSum ref;
      for (size_t l = 0; l < leaves; ++l) ref.add(x[l][i]);
      const float want = ref.to_f32();
      exact = exact && bits_of(a[i]) == (want == 0.0f ? 0u : bits_of(want));
    }
  }
  FixedAccumulator bad(3);
  const float refused[3] = {0x1p27f, std::numeric_limits<float>::quiet_NaN(), 1.0f};
  bad.add(refused);
  const bool reported = bad.status() == (kFixedOverflow | kFixedNaN);
  return {"fixed_accumulator", invariant && exact && reported,
          std::to_string(leaves) + " leaves x " + std::to_string(n) + " elements: forward, backward, 3-part merge " +
              (invariant ? "identical" : "DIFFER") + "; rounded sums vs exact sum " + (exact ? "equal" : "DIFFER") +
              "; overflow/NaN " + (reported ? "reported" : "NOT REPORTED")};
}

}  // namespace sb::det
