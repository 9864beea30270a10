// Fingerprints of raw bits with XXH3_64bits (seed 0), and their selftest. The hash reads memory
// bytes in order, so the value is fixed for a given encoding on every little-endian host.
#include "samebits/det/fingerprint.hpp"

#define XXH_STATIC_LINKING_ONLY  // XXH3_generateSecret_fromSeed
#include <xxhash.h>

#include <bit>
#include <cstdio>

#include "samebits/det/bits.hpp"
#include "samebits/det/selftest.hpp"
#include "samebits/det/xxh3_blocks.hpp"

namespace sb::det {

static_assert(std::endian::native == std::endian::little, "fingerprints are defined over little-endian encodings");

uint64_t fingerprint(const void* data, size_t bytes) { return XXH3_64bits(data, bytes); }

const unsigned char* xxh3_default_secret() {
  static const struct Secret {
    unsigned char bytes[kXxh3SecretSize];
    Secret() { XXH3_generateSecret_fromSeed(bytes, 0); }  // seed 0: the default secret itself
  } secret;
  return secret.bytes;
}
uint64_t fingerprint(const float* x, size_t n) { return fingerprint(static_cast<const void*>(x), n * sizeof(float)); }
uint64_t fingerprint(const double* x, size_t n) { return fingerprint(static_cast<const void*>(x), n * sizeof(double)); }
uint64_t fingerprint(const bf16* x, size_t n) { return fingerprint(static_cast<const void*>(x), n * sizeof(bf16)); }
uint64_t fingerprint(const fp16* x, size_t n) { return fingerprint(static_cast<const void*>(x), n * sizeof(fp16)); }

std::string fingerprint_hex(uint64_t fp) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(fp));
  return text;
}

SelftestResult selftest_fingerprint() {
  // Known values: XXH3_64bits of the empty input (xxHash's reference value) and of the floats
  // 0, 1, ..., 7 (recorded when this was written; a change means every stored fingerprint changed).
  float ramp[8];  // (8)
  for (int i = 0; i < 8; ++i) ramp[i] = static_cast<float>(i);
  const float zeros[2] = {0.0f, -0.0f};
  const float nans[2] = {float_of_bits(0x7fc00000u), float_of_bits(0x7fc00001u)};
  const void* empty = nullptr;
  const bool known = fingerprint(empty, 0) == 0x2d06800538d394c2ull && fingerprint(ramp, 8) == 0x7e4dfa05b8cea732ull;
  const bool zeros_differ = fingerprint(&zeros[0], 1) != fingerprint(&zeros[1], 1);
  const bool nans_differ = fingerprint(&nans[0], 1) != fingerprint(&nans[1], 1);
  std::string detail = "xxh3 known values " + std::string(known ? "match" : "DIFFER") + ", +0/-0 " +
                       (zeros_differ ? "differ" : "COLLIDE") + ", NaN payloads " +
                       (nans_differ ? "differ" : "COLLIDE") +
                       "; fingerprint(0..7) = " + fingerprint_hex(fingerprint(ramp, 8));
  return {"fingerprint", known && zeros_differ && nans_differ, detail};
}

}  // namespace sb::det
