// selftest_fp_formats: hand-derived conversions at every boundary (ties, overflow, subnormals,
// NaN) and the round trip of all 2^16 bf16 and fp16 encodings. The exhaustive comparisons against
// the CPU's F16C and an independent bf16 reference are in tests/unit/test_fp_formats.cpp.
#include "samebits/det/fp_formats.hpp"

#include <string>

#include "samebits/det/selftest.hpp"

namespace sb::det {
namespace {

struct Case {
  uint32_t f32;  // input encoding
  uint16_t expected;
};

// fp32 -> fp16, derived by hand from IEEE 754 round-to-nearest-even.
constexpr Case kFp16Cases[] = {
    {0x3f800000u, 0x3c00u},  // 1
    {0x3f801000u, 0x3c00u},  // 1 + 2^-11: tie, to even
    {0x3f803000u, 0x3c02u},  // 1 + 3·2^-11: tie, to even (up)
    {0x3f801001u, 0x3c01u},  // just above the tie
    {0x477fe000u, 0x7bffu},  // 65504, the largest finite
    {0x477fefffu, 0x7bffu},  // just below 65520
    {0x477ff000u, 0x7c00u},  // 65520: tie, to even = overflow to Inf
    {0x38800000u, 0x0400u},  // 2^-14, the smallest normal
    {0x387fc000u, 0x03ffu},  // the largest subnormal
    {0x33800000u, 0x0001u},  // 2^-24, the smallest subnormal
    {0x33000000u, 0x0000u},  // 2^-25: tie, to even (zero)
    {0x33000001u, 0x0001u},  // just above 2^-25
    {0x33c00000u, 0x0002u},  // 1.5·2^-24: tie, to even (up)
    {0x34200000u, 0x0002u},  // 2.5·2^-24: tie, to even (down)
    {0x80000000u, 0x8000u},  // -0
    {0x00000001u, 0x0000u},  // the smallest fp32 subnormal
    {0xff800000u, 0xfc00u},  // -Inf
    {0x7f800001u, 0x7e00u},  // signalling NaN: quieted, payload bits below fp16's dropped
    {0xffc02000u, 0xfe01u},  // negative NaN: sign and leading payload kept
};

// fp32 -> bf16.
constexpr Case kBf16Cases[] = {
    {0x3f800000u, 0x3f80u},  // 1
    {0x3f808000u, 0x3f80u},  // 1 + 2^-8: tie, to even
    {0x3f818000u, 0x3f82u},  // 1 + 3·2^-8: tie, to even (up)
    {0x3f808001u, 0x3f81u},  // just above the tie
    {0x7f7f7fffu, 0x7f7fu},  // just below the overflow threshold: the largest finite bf16
    {0x7f7f8000u, 0x7f80u},  // tie above the largest finite bf16: to even = Inf
    {0x7f7fffffu, 0x7f80u},  // the largest fp32: Inf
    {0x00008000u, 0x0000u},  // subnormal tie, to even (zero)
    {0x00018000u, 0x0002u},  // subnormal tie, to even (up)
    {0x00000001u, 0x0000u},  // the smallest fp32 subnormal
    {0x80000000u, 0x8000u},  // -0
    {0xff800000u, 0xff80u},  // -Inf
    {0x7f800001u, 0x7fc0u},  // signalling NaN: quieted
    {0xff812345u, 0xffc1u},  // negative NaN: sign and leading payload kept
};

}  // namespace

SelftestResult selftest_fp_formats() {
  int wrong = 0;
  for (const Case& c : kFp16Cases) wrong += fp16_bits_from_f32(float_of_bits(c.f32)) != c.expected;
  for (const Case& c : kBf16Cases) wrong += bf16_bits_from_f32(float_of_bits(c.f32)) != c.expected;
  // Widening is exact and narrowing gives the encoding back (NaNs come back quiet).
  int round_trip_wrong = 0;
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const uint16_t e = static_cast<uint16_t>(h);
    const bool fp16_nan = (e & 0x7c00u) == 0x7c00u && (e & 0x03ffu) != 0;
    const bool bf16_nan = (e & 0x7f80u) == 0x7f80u && (e & 0x007fu) != 0;
    round_trip_wrong += fp16_bits_from_f32(f32_from_fp16_bits(e)) != (fp16_nan ? (e | 0x0200u) : e);
    round_trip_wrong += bf16_bits_from_f32(f32_from_bf16_bits(e)) != (bf16_nan ? (e | 0x0040u) : e);
  }
  const int cases = static_cast<int>(std::size(kFp16Cases) + std::size(kBf16Cases));
  return {"fp_formats", wrong == 0 && round_trip_wrong == 0,
          std::to_string(cases - wrong) + "/" + std::to_string(cases) +
              " boundary cases right, 2x65536 round trips: " + std::to_string(round_trip_wrong) + " wrong"};
}

}  // namespace sb::det
