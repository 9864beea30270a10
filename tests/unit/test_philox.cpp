// Philox4x32-10: the Random123 known-answer vectors, cuRAND's element layout, the uniform map's
// range, Box–Muller normals against fp64 and in distribution, stream_of's values (FNV-1a) fixed.
// The bitwise comparison with cuRAND's host generator is test_philox_curand.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "samebits/det/bits.hpp"
#include "samebits/det/philox.hpp"

using namespace sb::det;

TEST_CASE("philox4x32_10 equals the Random123 known-answer vectors") {
  // Random123 examples/kat_vectors, "philox4x32 10": counter, key, expected output.
  const Philox4 zeros = philox4x32_10(0, 0, 0, 0, 0, 0);
  const Philox4 ones = philox4x32_10(0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu);
  const Philox4 pi = philox4x32_10(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u);
  const uint32_t expected[3][4] = {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
                                   {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
                                   {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}};
  const Philox4* got[3] = {&zeros, &ones, &pi};
  for (int t = 0; t < 3; ++t) {
    for (int w = 0; w < 4; ++w) CHECK(got[t]->v[w] == expected[t][w]);
  }
}

TEST_CASE("philox_u32 is lane index % 4 of the block at counter (index / 4, stream), key seed") {
  const uint64_t seed = 0x299f31d0a4093822ull, stream = 0x0370734413198a2eull;
  const uint64_t group = 0x05a308d3243f6a88ull;
  const Philox4 b = philox4x32_10(0x243f6a88u, 0x05a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u);
  for (unsigned lane = 0; lane < 4; ++lane) {
    CHECK(philox_u32(seed, stream, 4 * group + lane) == b.v[lane]);
  }
}

TEST_CASE("uniform_from_u32 maps onto (0, 1], monotone, at both ends exhaustively") {
  CHECK(bits_of(uniform_from_u32(0u)) == bits_of(0x1p-33f));
  CHECK(bits_of(uniform_from_u32(0xffffffffu)) == bits_of(1.0f));
  int wrong = 0;
  float previous = 0.0f;
  for (uint32_t x = 0; x < (1u << 23); ++x) {  // exact region: (2x + 1) · 2^-33 fits 24 bits
    const float u = uniform_from_u32(x);
    wrong += !(u > previous) || static_cast<double>(u) != std::ldexp(2.0 * x + 1.0, -33);
    previous = u;
  }
  previous = uniform_from_u32(0xff000000u - 1u);
  for (uint32_t x = 0xff000000u;; ++x) {
    const float u = uniform_from_u32(x);
    wrong += !(u >= previous && u <= 1.0f);
    previous = u;
    if (x == 0xffffffffu) break;
  }
  CHECK(wrong == 0);
}

TEST_CASE("philox_normal is Box-Muller of uniforms 2i, 2i+1 (fp64 reference, tolerance)") {
  const uint64_t seed = 7, stream = stream_of("test.normal");
  double worst = 0.0;
  for (uint64_t i = 0; i < 100000; ++i) {
    const double u1 = philox_uniform(seed, stream, 2 * i);
    const double u2 = philox_uniform(seed, stream, 2 * i + 1);
    const double ref = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    const double error = std::fabs(philox_normal(seed, stream, i) - ref) / (1.0 + std::fabs(ref));
    worst = std::fmax(worst, error);
  }
  INFO("worst error relative to 1 + |x|: " << worst);
  CHECK(worst < 1e-5);
}

TEST_CASE("philox_normal over 10^6 draws: mean, variance and tails of a standard normal") {
  const uint64_t seed = 0x5eed, stream = stream_of("test.normal.moments");
  const int n = 1000000;
  double sum = 0.0, sum_sq = 0.0;
  int beyond_2 = 0;
  for (int i = 0; i < n; ++i) {
    const double x = philox_normal(seed, stream, static_cast<uint64_t>(i));
    sum += x;
    sum_sq += x * x;
    beyond_2 += std::fabs(x) > 2.0;
  }
  const double mean = sum / n, var = sum_sq / n - mean * mean;
  const double tail = static_cast<double>(beyond_2) / n;
  // Standard errors: mean 1e-3, variance sqrt(2/n) = 1.4e-3, P(|x| > 2) = 0.0455: 2.1e-4.
  // Bounds at 5 standard errors.
  INFO("mean " << mean << " variance " << var << " P(|x|>2) " << tail);
  CHECK(std::fabs(mean) < 5e-3);
  CHECK(std::fabs(var - 1.0) < 7e-3);
  CHECK(std::fabs(tail - 0.04550026) < 1.05e-3);
}

TEST_CASE("stream_of is FNV-1a 64 of the name: fixed values, usable at compile time") {
  static_assert(stream_of("") == 0xcbf29ce484222325ull);
  static_assert(stream_of("a") == 0xaf63dc4c8601ec8cull);  // FNV test vectors
  static_assert(stream_of("foobar") == 0x85944171f73967e8ull);
  CHECK(stream_of("blocks.0.attn.wq") == 0x409cff4941f90b78ull);
  CHECK(stream_of("blocks.0.attn.wq") != stream_of("blocks.0.attn.wk"));
}

TEST_CASE("philox_normal_fill: bitwise scale · philox_normal of every element, any even start and length") {
  const float scale = 0.02f;
  for (uint64_t first : {uint64_t{0}, uint64_t{2}, uint64_t{4096}, uint64_t{1} << 33}) {
    for (uint64_t n : {uint64_t{1}, uint64_t{63}, uint64_t{64}, uint64_t{65}, uint64_t{1001}}) {
      std::vector<float> out(n + 1, -7.0f);
      sb::det::philox_normal_fill(42, 0xabcdef, first, n, scale, out.data());
      for (uint64_t i = 0; i < n; ++i) {
        CAPTURE(first);
        CAPTURE(i);
        REQUIRE(sb::det::bits_of(out[i]) == sb::det::bits_of(scale * sb::det::philox_normal(42, 0xabcdef, first + i)));
      }
      CHECK(out[n] == -7.0f);  // nothing written past the end
    }
  }
}
