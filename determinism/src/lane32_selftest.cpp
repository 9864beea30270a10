// selftest_lane32: the host lane32_sum / lane32_dot / lane32_sumsq (SIMD when built with it) give
// the bits of the scalar definition for lengths around multiples of 32, on data with subnormals,
// signed zeros and cancellation.
#include <cstdint>
#include <string>
#include <vector>

#include "samebits/det/bits.hpp"
#include "samebits/det/lane32.hpp"
#include "samebits/det/selftest.hpp"

namespace sb::det {

SelftestResult selftest_lane32() {
  const size_t lengths[] = {0, 1, 31, 32, 33, 1000, 4097};
  std::vector<float> x(4097), y(4097);
  uint64_t state = 0x2545F4914F6CDD1Dull;
  for (size_t i = 0; i < x.size(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const uint32_t r = static_cast<uint32_t>(state >> 32);
    // Exponents 2^-20 .. 2^11, every 16th a subnormal, every 16th a -0, some cancellation.
    const uint32_t exponent = i % 16 == 0 ? 0u : 107u + (r >> 27);
    x[i] = float_of_bits((r & 0x807FFFFFu) | (exponent << 23));
    if (i % 16 == 8) x[i] = -0.0f;
    if (i % 5 == 4) x[i] = -x[i - 1];
    y[i] = float_of_bits(((r >> 3) & 0x807FFFFFu) | ((120u + (r & 15u)) << 23));
  }
  int agree = 0, total = 0;
  for (size_t n : lengths) {
    agree += bits_of(lane32_sum(x.data(), n)) == bits_of(lane32_sum_ref(x.data(), n));
    agree += bits_of(lane32_dot(x.data(), y.data(), n)) == bits_of(lane32_dot_ref(x.data(), y.data(), n));
    agree += bits_of(lane32_sumsq(x.data(), n)) == bits_of(lane32_dot_ref(x.data(), x.data(), n));
    total += 3;
  }
#if defined(SB_HAVE_AVX512)
  const char* form = "AVX-512";
#elif defined(SB_HAVE_AVX2)
  const char* form = "AVX2";
#else
  const char* form = "scalar";
#endif
  return {"lane32", agree == total,
          std::string(form) + " sum/dot/sumsq vs the scalar definition, lengths 0..4097: " + std::to_string(agree) +
              "/" + std::to_string(total) + " bitwise equal"};
}

}  // namespace sb::det
