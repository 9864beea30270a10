// The exact GEMM's AVX512-VNNI kernel: vpdpwssd (signed int16 × int16, two products summed into
// each int32 lane, wrapping), 16 accumulators for the 8 × 32 tile, added to the int64 totals every
// kFlushPairs pairs of k (exact: exact_gemm.hpp) — the same integers as kernel_scalar. Compiled for
// AVX512-VNNI by a function attribute and run only where cpuid reports it (exact_isa.cpp).
#include "exact_gemm.hpp"

#if defined(__x86_64__)
#include <algorithm>

#include "gemm_simd.hpp"

namespace sb::cpu::exact {

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void kernel_avx512(int kp, const int32_t* a, const int32_t* b,
                                                                          int64_t* d) {
  static_assert(MR == 8 && NR == 32 && kPair == 2, "kernel_avx512: tile 8 × 32, pairs of k");
  for (int p0 = 0; p0 < kp; p0 += kFlushPairs) {
    const int p1 = std::min(kp, p0 + kFlushPairs);
    __m512i acc[MR][2];
    for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int p = p0; p < p1; ++p) {
      const int32_t* bp = b + static_cast<size_t>(p) * NR;
      const __m512i b0 = _mm512_loadu_si512(bp);
      const __m512i b1 = _mm512_loadu_si512(bp + 16);
      const int32_t* ap = a + static_cast<size_t>(p) * MR;
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const __m512i av = _mm512_set1_epi32(ap[r]);
        acc[r][0] = _mm512_dpwssd_epi32(acc[r][0], av, b0);
        acc[r][1] = _mm512_dpwssd_epi32(acc[r][1], av, b1);
      }
    }
    alignas(64) int32_t part[MR * NR];
    for (int r = 0; r < MR; ++r) {
      _mm512_store_si512(part + r * NR, acc[r][0]);
      _mm512_store_si512(part + r * NR + 16, acc[r][1]);
    }
    for (int e = 0; e < MR * NR; ++e) d[e] += part[e];
  }
}

}  // namespace sb::cpu::exact
#endif
