// Fingerprints hash raw bits: -0.0/+0.0 and NaN payloads differ, the typed overloads equal the
// byte hash, and known values stay fixed (every stored run file depends on them).
#include <doctest/doctest.h>

#include <xxhash.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "samebits/det/bits.hpp"
#include "samebits/det/fingerprint.hpp"
#include "samebits/det/selftest.hpp"

using namespace sb::det;

TEST_CASE("known values: xxHash's reference for the empty input, and fixed tensors") {
  const void* empty = nullptr;
  CHECK(fingerprint(empty, 0) == 0x2d06800538d394c2ull);
  float ramp[8];  // (8)
  for (int i = 0; i < 8; ++i) ramp[i] = static_cast<float>(i);
  CHECK(fingerprint(ramp, 8) == 0x7e4dfa05b8cea732ull);
  CHECK(fingerprint_hex(fingerprint(ramp, 8)) == "7e4dfa05b8cea732");
  CHECK(fingerprint_hex(0x1ull) == "0000000000000001");
}

TEST_CASE("signed zeros and NaN payloads give different fingerprints") {
  const float pz = 0.0f, nz = -0.0f;
  CHECK(pz == nz);
  CHECK(fingerprint(&pz, 1) != fingerprint(&nz, 1));
  const double dpz = 0.0, dnz = -0.0;
  CHECK(fingerprint(&dpz, 1) != fingerprint(&dnz, 1));
  const float nans[] = {float_of_bits(0x7fc00000u), float_of_bits(0x7fc00001u), float_of_bits(0xffc00000u),
                        float_of_bits(0x7f800001u)};  // (4)
  for (int i = 0; i < 4; ++i) {
    for (int j = i + 1; j < 4; ++j) CHECK(fingerprint(&nans[i], 1) != fingerprint(&nans[j], 1));
  }
  const bf16 bz[2] = {bf16{0x0000u}, bf16{0x8000u}};
  CHECK(fingerprint(&bz[0], 1) != fingerprint(&bz[1], 1));
}

TEST_CASE("one flipped bit anywhere in a tensor changes the fingerprint") {
  std::vector<float> x(1000);  // (1000)
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.001f * static_cast<float>(i);
  const uint64_t base = fingerprint(x.data(), x.size());
  for (size_t i = 0; i < x.size(); i += 97) {
    for (int bit = 0; bit < 32; bit += 5) {
      std::vector<float> y = x;
      y[i] = float_of_bits(bits_of(y[i]) ^ (1u << bit));
      CHECK(fingerprint(y.data(), y.size()) != base);
    }
  }
}

TEST_CASE("typed overloads hash the same bytes as the raw overload") {
  const double d[3] = {1.0, -2.5, 1e300};            // (3)
  const fp16 h[3] = {{0x3c00}, {0xc100}, {0x7bff}};  // (3)
  CHECK(fingerprint(d, 3) == XXH3_64bits(d, sizeof d));
  CHECK(fingerprint(h, 3) == XXH3_64bits(h, sizeof h));
  CHECK(fingerprint(d, 3) == fingerprint(static_cast<const void*>(d), 3 * sizeof(double)));
}

TEST_CASE("selftest_fingerprint passes") {
  const auto r = selftest_fingerprint();
  INFO(r.detail);
  CHECK(r.ok);
}
