// fp32 <-> fp16 against the CPU's F16C instructions (VCVTPS2PH with round-to-nearest-even,
// VCVTPH2PS), bitwise, NaNs included (samebits follows F16C's NaN rule): all 2^32 fp32 inputs and
// all 2^16 fp16 encodings. Exits 77 (skipped) on a CPU without F16C.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "samebits/det/fp_formats.hpp"
#include "support/skip.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>

using namespace sb::det;

namespace {

std::string hex(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", v);
  return text;
}

// F16C and AVX in CPUID, and the OS saving the YMM registers (XGETBV).
void require_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  const bool cpu = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) && (c & bit_AVX) && (c & bit_OSXSAVE);
  unsigned xcr0 = 0, xcr0_high = 0;
  if (cpu) __asm__("xgetbv" : "=a"(xcr0), "=d"(xcr0_high) : "c"(0));
  if (!cpu || (xcr0 & 6u) != 6u) sb::test::skip("this CPU has no F16C: no hardware fp16 reference");
}

// F16C conversion of the 8 fp32 encodings u[0..7] (8) into out[0..7] (8).
__attribute__((target("avx,f16c"))) void f16c_narrow8(const uint32_t* u, uint16_t* out) {
  const __m256 v = _mm256_castsi256_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(u)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

__attribute__((target("avx,f16c"))) uint32_t f16c_widen(uint16_t h) { return bits_of(_cvtsh_ss(h)); }

}  // namespace

TEST_CASE("fp16_bits_from_f32 equals F16C for all 2^32 fp32 inputs") {
  require_f16c();
  uint64_t wrong = 0;
  uint32_t first_wrong = 0;
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : wrong)
  for (int64_t chunk = 0; chunk < (int64_t{1} << 16); ++chunk) {
    uint64_t local = 0;
    uint32_t local_first = 0;
    uint32_t u[8];    // (8)
    uint16_t ref[8];  // (8)
    for (uint32_t low = 0; low < (1u << 16); low += 8) {
      for (uint32_t j = 0; j < 8; ++j) u[j] = static_cast<uint32_t>(chunk << 16) | (low + j);
      f16c_narrow8(u, ref);
      for (uint32_t j = 0; j < 8; ++j) {
        if (fp16_bits_from_f32(float_of_bits(u[j])) != ref[j] && local++ == 0) local_first = u[j];
      }
    }
    if (local != 0) {
#pragma omp critical
      if (wrong == 0 || local_first < first_wrong) first_wrong = local_first;
      wrong += local;
    }
  }
  INFO("first wrong input " << hex(first_wrong) << ": samebits "
                            << hex(fp16_bits_from_f32(float_of_bits(first_wrong))));
  CHECK(wrong == 0);
}

TEST_CASE("f32_from_fp16_bits equals F16C for all 2^16 fp16 encodings") {
  require_f16c();
  int wrong = 0;
  uint32_t first_wrong = 0;
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const uint16_t e = static_cast<uint16_t>(h);
    if (bits_of(f32_from_fp16_bits(e)) != f16c_widen(e) && wrong++ == 0) first_wrong = h;
  }
  INFO("first wrong fp16 " << hex(first_wrong) << ": samebits "
                           << hex(bits_of(f32_from_fp16_bits(static_cast<uint16_t>(first_wrong)))) << ", F16C "
                           << hex(f16c_widen(static_cast<uint16_t>(first_wrong))));
  CHECK(wrong == 0);
}

#else
TEST_CASE("F16C reference") { sb::test::skip("F16C is an x86 instruction set"); }
#endif
