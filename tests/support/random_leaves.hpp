// Random gradient-like inputs of the accumulator tests (det::FixedAccumulator, BlockAccumulator and
// their wire): floats with random 24-bit mantissas over a range of exponents, zeros of both signs,
// and values that cancel across leaves. Deterministic for a given generator state.
#pragma once
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace sb::test {

using Leaves = std::vector<std::vector<float>>;  // (leaves, n)

// A float with a random 24-bit mantissa and exponent uniform in [lo, hi], random sign.
inline float random_float(std::mt19937_64& rng, int lo, int hi) {
  const int e = std::uniform_int_distribution<int>(lo, hi)(rng);
  const float m = static_cast<float>((rng() >> 40) | (1ull << 23));
  const float x = std::ldexp(m, e - 23);
  return (rng() & 1) ? -x : x;
}

// Gradient-like leaves: exponents in [lo, hi], zeros, cancelling pairs across leaves.
inline Leaves random_leaves(std::mt19937_64& rng, size_t leaves, size_t n, int lo, int hi) {
  Leaves out(leaves, std::vector<float>(n));
  for (size_t l = 0; l < leaves; ++l) {
    for (size_t i = 0; i < n; ++i) {
      float x = random_float(rng, lo, hi);
      if (rng() % 16 == 0) x = 0.0f;
      if (rng() % 16 == 1) x = -0.0f;
      if (l % 2 == 1 && rng() % 4 == 0) x = -out[l - 1][i];
      out[l][i] = x;
    }
  }
  return out;
}

}  // namespace sb::test
