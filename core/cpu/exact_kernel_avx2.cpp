// The exact GEMM's AVX2 kernel: vpmaddubsw (unsigned × signed bytes, pairs summed to int16: at most
// 2·127·63 = 16 002, never saturating) then vpmaddwd by ones (to int32) — exact products, so the
// same integers as kernel_scalar. Compiled for AVX2 by a function attribute and run only where
// cpuid reports it (exact_isa.cpp).
#include "exact_gemm.hpp"

#if defined(__x86_64__)
#include "gemm_simd.hpp"

namespace sb::cpu::exact {
namespace {

// Rows r0 .. r0+3, columns j0 .. j0+15 of the tile: 8 accumulators of 8 lanes.
__attribute__((target("avx2"))) void quarter(int kq, const uint8_t* a, const int8_t* b, const int32_t* b_sum,
                                             int32_t* d, bool load, int r0, int j0) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[4][2];
  for (int r = 0; r < 4; ++r)
    for (int h = 0; h < 2; ++h)
      acc[r][h] = load ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d + (r0 + r) * NR + j0 + 8 * h))
                       : _mm256_setzero_si256();
  for (int q = 0; q < kq; ++q) {
    const int8_t* bq = b + static_cast<size_t>(q) * NR * kQuad + j0 * kQuad;
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bq));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bq + 8 * kQuad));
    const uint8_t* aq = a + static_cast<size_t>(q) * MR * kQuad;
    for (int r = 0; r < 4; ++r) {
      int32_t quad;
      __builtin_memcpy(&quad, aq + (r0 + r) * kQuad, sizeof quad);
      const __m256i av = _mm256_set1_epi32(quad);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(_mm256_maddubs_epi16(av, b0), ones));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(_mm256_maddubs_epi16(av, b1), ones));
    }
  }
  const __m256i s0 = _mm256_slli_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b_sum + j0)), 6);
  const __m256i s1 = _mm256_slli_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b_sum + j0 + 8)), 6);
  for (int r = 0; r < 4; ++r) {
    int32_t* row = d + (r0 + r) * NR + j0;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(row), _mm256_sub_epi32(acc[r][0], s0));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + 8), _mm256_sub_epi32(acc[r][1], s1));
  }
}

}  // namespace

void kernel_avx2(int kq, const uint8_t* a, const int8_t* b, const int32_t* b_sum, int32_t* d, bool load) {
  static_assert(kOffset == 64 && MR == 8 && NR == 32, "kernel_avx2: offset 2^6, tile 8 × 32 in quarters");
  for (int r0 = 0; r0 < MR; r0 += 4)
    for (int j0 = 0; j0 < NR; j0 += 16) quarter(kq, a, b, b_sum, d, load, r0, j0);
}

}  // namespace sb::cpu::exact
#endif
