// The exact GEMM's AVX512-VNNI kernel: vpdpbusd (unsigned × signed bytes, four products summed
// into each int32 lane, wrapping), 16 accumulators for the 8 × 32 tile — the same integers as
// kernel_scalar. Compiled for AVX512-VNNI by a function attribute and run only where cpuid reports
// it (exact_isa.cpp).
#include "exact_gemm.hpp"

#if defined(__x86_64__)
#include "gemm_simd.hpp"

namespace sb::cpu::exact {

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void kernel_avx512(int kq, const uint8_t* a, const int8_t* b,
                                                                          const int32_t* b_sum, int32_t* d, bool load) {
  static_assert(kOffset == 64 && MR == 8 && NR == 32, "kernel_avx512: offset 2^6, tile 8 × 32");
  __m512i acc[MR][2];
  for (int r = 0; r < MR; ++r)
    for (int h = 0; h < 2; ++h) acc[r][h] = load ? _mm512_loadu_si512(d + r * NR + 16 * h) : _mm512_setzero_si512();
  for (int q = 0; q < kq; ++q) {
    const int8_t* bq = b + static_cast<size_t>(q) * NR * kQuad;
    const __m512i b0 = _mm512_loadu_si512(bq);
    const __m512i b1 = _mm512_loadu_si512(bq + 16 * kQuad);
    const uint8_t* aq = a + static_cast<size_t>(q) * MR * kQuad;
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      int32_t quad;
      __builtin_memcpy(&quad, aq + r * kQuad, sizeof quad);
      const __m512i av = _mm512_set1_epi32(quad);
      acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], av, b0);
      acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], av, b1);
    }
  }
  const __m512i s0 = _mm512_slli_epi32(_mm512_loadu_si512(b_sum), 6);
  const __m512i s1 = _mm512_slli_epi32(_mm512_loadu_si512(b_sum + 16), 6);
  for (int r = 0; r < MR; ++r) {
    _mm512_storeu_si512(d + r * NR, _mm512_sub_epi32(acc[r][0], s0));
    _mm512_storeu_si512(d + r * NR + 16, _mm512_sub_epi32(acc[r][1], s1));
  }
}

}  // namespace sb::cpu::exact
#endif
