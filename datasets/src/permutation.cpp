// keyed_permutation: 6 Feistel rounds on 2h bits (2^(2h) >= n, so at most 4n values) with Philox
// round functions, then cycle-walking: re-apply until the value falls in [0, n). Integer only.
#include "samebits/data/permutation.hpp"

#include "samebits/det/error.hpp"
#include "samebits/det/philox.hpp"

namespace sb::data {

namespace {
constexpr int kRounds = 6;

// Bits per Feistel half: the smallest h >= 1 with 2^(2h) >= n.
int half_bits(uint64_t n) {
  int bits = 0;
  while (bits < 64 && (n - 1) >> bits != 0) ++bits;
  return bits < 2 ? 1 : (bits + 1) / 2;
}

uint64_t feistel(uint64_t x, int h, uint64_t seed, uint64_t stream) {
  const uint64_t mask = h >= 32 ? 0xFFFFFFFFull : (uint64_t{1} << h) - 1;
  uint64_t left = (x >> h) & mask;
  uint64_t right = x & mask;
  for (int r = 0; r < kRounds; ++r) {
    const uint64_t f = det::philox_u32(seed, stream, (uint64_t(r) << 32) | right) & mask;
    const uint64_t next = left ^ f;
    left = right;
    right = next;
  }
  return (left << h) | right;
}
}  // namespace

uint64_t keyed_permutation(uint64_t x, uint64_t n, uint64_t seed, uint64_t stream) {
  SB_CHECK(n >= 1 && x < n, "keyed_permutation: index ", x, " outside [0, ", n, ")");
  if (n == 1) return 0;
  const int h = half_bits(n);
  uint64_t y = feistel(x, h, seed, stream);
  while (y >= n) y = feistel(y, h, seed, stream);
  return y;
}

}  // namespace sb::data
