// fp32 <-> bf16 over every input: all 2^32 fp32 encodings against an independent reference
// (nearest of the two neighbouring bf16 values by exact fp64 distances, ties to even), and all
// 2^16 bf16 encodings widened against their value computed in fp64. Plus fp16's structure (its
// exhaustive comparison with the CPU's F16C is test_fp16_f16c.cpp) and the storage types.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "samebits/det/fp_formats.hpp"

using namespace sb::det;

namespace {

std::string hex(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", v);
  return text;
}

bool is_nan_bits(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

// Reference fp32 -> bf16, written from the definition rather than from the carry trick.
uint16_t bf16_reference(uint32_t u) {
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  if (is_nan_bits(u)) {  // quiet NaN, same sign, the 6 payload bits below the quiet bit kept
    return static_cast<uint16_t>(sign | 0x7f80u | 0x0040u | ((u >> 16) & 0x003fu));
  }
  const uint32_t mag = u & 0x7fffffffu;
  const uint16_t below = static_cast<uint16_t>(mag >> 16);  // magnitude truncated to bf16
  const double x = std::fabs(static_cast<double>(float_of_bits(u)));
  if (mag == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7f80u);
  const double lo = static_cast<double>(float_of_bits(static_cast<uint32_t>(below) << 16));
  // The bf16 above the largest finite one (0x7f7f) is Inf; it counts as 2^128 for rounding.
  const uint32_t above = static_cast<uint32_t>(below + 1) << 16;
  const double hi = below == 0x7f7fu ? std::ldexp(1.0, 128) : static_cast<double>(float_of_bits(above));
  const double to_lo = x - lo, to_hi = hi - x;  // exact: both fit in 53 bits
  uint16_t mag16;
  if (to_lo < to_hi) {
    mag16 = below;
  } else if (to_hi < to_lo) {
    mag16 = static_cast<uint16_t>(below + 1);
  } else {
    mag16 = (below & 1u) ? static_cast<uint16_t>(below + 1) : below;
  }
  return static_cast<uint16_t>(sign | mag16);
}

// The exact value of a finite bf16 encoding, from its fields.
double bf16_value(uint16_t b) {
  const int e = (b >> 7) & 0xff;
  const int m = b & 0x7f;
  const double mag = e == 0 ? std::ldexp(m, -133) : std::ldexp(128 + m, e - 134);
  return (b & 0x8000u) ? -mag : mag;
}

}  // namespace

TEST_CASE("bf16_bits_from_f32 equals the reference for all 2^32 fp32 inputs") {
  uint64_t wrong = 0;
  uint32_t first_wrong = 0;
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : wrong)
  for (int64_t chunk = 0; chunk < (int64_t{1} << 16); ++chunk) {
    uint64_t local = 0;
    uint32_t local_first = 0;
    for (uint32_t low = 0; low < (1u << 16); ++low) {
      const uint32_t u = static_cast<uint32_t>(chunk << 16) | low;
      if (bf16_bits_from_f32(float_of_bits(u)) != bf16_reference(u)) {
        if (local++ == 0) local_first = u;
      }
    }
    if (local != 0) {
#pragma omp critical
      if (wrong == 0 || local_first < first_wrong) first_wrong = local_first;
      wrong += local;
    }
  }
  INFO("first wrong input " << hex(first_wrong) << ": samebits " << hex(bf16_bits_from_f32(float_of_bits(first_wrong)))
                            << ", reference " << hex(bf16_reference(first_wrong)));
  CHECK(wrong == 0);
}

TEST_CASE("f32_from_bf16_bits is exact for all 2^16 encodings; NaNs come back quiet") {
  int wrong = 0;
  for (uint32_t b = 0; b <= 0xffffu; ++b) {
    const uint16_t e = static_cast<uint16_t>(b);
    const uint32_t got = bits_of(f32_from_bf16_bits(e));
    uint32_t expected;
    if ((e & 0x7f80u) == 0x7f80u) {  // Inf, or NaN: sign and payload kept, quiet bit set
      expected = (static_cast<uint32_t>(e) << 16) | ((e & 0x7fu) != 0 ? 0x00400000u : 0u);
    } else {
      expected = bits_of(static_cast<float>(bf16_value(e)));
    }
    wrong += got != expected;
  }
  CHECK(wrong == 0);
}

TEST_CASE("f32_from_fp16_bits is exact for all 2^16 finite encodings and keeps Inf") {
  int wrong = 0;
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const uint16_t e = static_cast<uint16_t>(h);
    const int exponent = (e >> 10) & 0x1f;
    const int m = e & 0x3ff;
    if (exponent == 0x1f) continue;  // Inf and NaN: compared with F16C in test_fp16_f16c.cpp
    const double mag = exponent == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, exponent - 25);
    const float expected = static_cast<float>((e & 0x8000u) ? -mag : mag);
    wrong += bits_of(f32_from_fp16_bits(e)) != bits_of(expected);
  }
  CHECK(wrong == 0);
  CHECK(bits_of(f32_from_fp16_bits(0x7c00u)) == 0x7f800000u);
  CHECK(bits_of(f32_from_fp16_bits(0xfc00u)) == 0xff800000u);
}

TEST_CASE("round_to_bf16 and round_to_fp16 give the nearest representable value as fp32") {
  CHECK(round_to_bf16(1.0f + 0x1p-8f) == 1.0f);
  CHECK(round_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 1.0f + 0x1p-7f);
  CHECK(round_to_fp16(65519.0f) == 65504.0f);
  CHECK(std::isinf(round_to_fp16(65520.0f)));
  CHECK(round_to_fp16(0x1p-25f) == 0.0f);
  CHECK(round_to_fp16(0x1.000002p-25f) == 0x1p-24f);
  CHECK(bits_of(round_to_fp16(-0x1p-26f)) == 0x80000000u);  // underflow keeps the sign
  CHECK(std::isnan(round_to_bf16(NAN)));
  // Each is idempotent: a rounded value is representable, so it comes back unchanged.
  for (uint32_t u = 0; u < 0x7f800000u; u += 0x10001u) {
    const float x = float_of_bits(u);
    CHECK_MESSAGE(bits_of(round_to_bf16(round_to_bf16(x))) == bits_of(round_to_bf16(x)), u);
    CHECK_MESSAGE(bits_of(round_to_fp16(round_to_fp16(x))) == bits_of(round_to_fp16(x)), u);
  }
}

TEST_CASE("bf16 and fp16 storage types hold the encoding") {
  const bf16 b = bf16::from_f32(-2.5f);
  const fp16 h = fp16::from_f32(-2.5f);
  CHECK(b.bits == 0xc020u);
  CHECK(h.bits == 0xc100u);
  CHECK(b.to_f32() == -2.5f);
  CHECK(h.to_f32() == -2.5f);
}
