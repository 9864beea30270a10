// The device fingerprint's decomposition (det/xxh3_blocks.hpp) against libxxhash's XXH3_64bits,
// bit for bit: every length 0..5000 and large ones, the blocks' lane sums taken in any order (as
// parallel threads would), and Backend::fingerprints on the CPU backend equal det::fingerprint.
#include <doctest/doctest.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/det/fingerprint.hpp"
#include "samebits/det/xxh3_blocks.hpp"

namespace {

std::vector<unsigned char> random_bytes(size_t n, uint64_t seed) {
  std::vector<unsigned char> v(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift64
    v[i] = static_cast<unsigned char>(x >> 56);
  }
  return v;
}

// The fingerprint as a device computes it: ≤ 240 bytes on the host, else the decomposition.
uint64_t by_blocks(const unsigned char* p, size_t len) {
  if (len <= sb::det::kXxh3MidMax) return sb::det::fingerprint(p, len);
  return sb::det::xxh3_long_by_blocks(p, len, sb::det::xxh3_default_secret());
}

}  // namespace

TEST_CASE("the block decomposition is XXH3_64bits for every length 0..5000") {
  const std::vector<unsigned char> data = random_bytes(5000, 1);
  for (size_t len = 0; len <= data.size(); ++len) {
    const uint64_t want = XXH3_64bits(data.data(), len);
    if (by_blocks(data.data(), len) != want) FAIL_CHECK("length ", len);
  }
}

TEST_CASE("the block decomposition is XXH3_64bits for large inputs and at block edges") {
  const std::vector<unsigned char> data = random_bytes((size_t{3} << 20) + 77, 2);
  for (const size_t len : {size_t{1024} * 7, size_t{1024} * 7 + 1, size_t{1024} * 7 - 1, size_t{1024} * 7 + 64,
                           size_t{1} << 20, (size_t{1} << 20) + 63, data.size()}) {
    CHECK_MESSAGE(by_blocks(data.data(), len) == XXH3_64bits(data.data(), len), "length ", len);
  }
}

TEST_CASE("each block's lane sums do not depend on the order of its stripes or of the blocks") {
  namespace x = sb::det::xxh3;
  const unsigned char* secret = sb::det::xxh3_default_secret();
  const std::vector<unsigned char> data = random_bytes(1024 * 40 + 300, 3);
  const size_t len = data.size(), blocks = x::full_blocks(len);
  // Step 1 in reverse block order, stripes within each block in reverse: as any thread schedule.
  std::vector<uint64_t> c(blocks * 8, 0);
  for (size_t b = blocks; b-- > 0;) {
    for (size_t s = sb::det::kXxh3StripesPerBlock; s-- > 0;)
      x::add_stripe(&c[b * 8], data.data() + b * sb::det::kXxh3Block + s * 64, secret + 8 * s);
  }
  // Step 2 lane by lane (one thread per lane), then step 3.
  uint64_t lanes[8];
  for (int i = 0; i < 8; ++i) {
    lanes[i] = x::initial_lane(i);
    for (size_t b = 0; b < blocks; ++b)
      lanes[i] = x::apply_block_lane(lanes[i], c[b * 8 + i], x::scramble_key(secret, i));
  }
  CHECK(x::finish_long(lanes, data.data(), len, secret) == XXH3_64bits(data.data(), len));
}

TEST_CASE("Backend::fingerprints on the CPU backend is det::fingerprint of each span") {
  const auto be = sb::make_cpu_backend();
  const std::vector<unsigned char> bytes = random_bytes(4 * 5000, 4);
  const auto* flat = reinterpret_cast<const float*>(bytes.data());
  const std::vector<sb::TensorSpan> spans{{0, 0}, {0, 7}, {16, 60}, {80, 61}, {144, 4000}};
  std::vector<uint64_t> got(spans.size());
  be->fingerprints(flat, spans, got.data());
  for (size_t t = 0; t < spans.size(); ++t)
    CHECK(got[t] == sb::det::fingerprint(flat + spans[t].offset, spans[t].numel));
}
