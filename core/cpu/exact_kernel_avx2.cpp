// The exact GEMM's AVX2 kernel: vpmaddwd (signed int16 × int16, two products summed into each int32
// lane: at most 2·4095² < 2^31, never the one wrapping case −2^15·−2^15) and vpaddd, added to the
// int64 totals every kFlushPairs pairs of k (exact: exact_gemm.hpp) — the same integers as
// kernel_scalar. Compiled for AVX2 by a function attribute and run only where cpuid reports it
// (exact_isa.cpp).
#include "exact_gemm.hpp"

#if defined(__x86_64__)
#include <algorithm>

#include "gemm_simd.hpp"

namespace sb::cpu::exact {
namespace {

// Rows r0 .. r0+3, columns j0 .. j0+15 of the tile over pairs [p0, p1): 8 accumulators of 8 lanes.
__attribute__((target("avx2"))) void quarter(int p0, int p1, const int32_t* a, const int32_t* b, int64_t* d, int r0,
                                             int j0) {
  __m256i acc[4][2];
  for (int r = 0; r < 4; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
#pragma GCC unroll 2
  for (int p = p0; p < p1; ++p) {
    const int32_t* bp = b + static_cast<size_t>(p) * NR + j0;
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + 8));
    const int32_t* ap = a + static_cast<size_t>(p) * MR;
    for (int r = 0; r < 4; ++r) {
      const __m256i av = _mm256_set1_epi32(ap[r0 + r]);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(av, b0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(av, b1));
    }
  }
  alignas(32) int32_t part[4][16];
  for (int r = 0; r < 4; ++r) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(part[r]), acc[r][0]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(part[r] + 8), acc[r][1]);
  }
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 16; ++c) d[(r0 + r) * NR + j0 + c] += part[r][c];
}

}  // namespace

void kernel_avx2(int kp, const int32_t* a, const int32_t* b, int64_t* d) {
  static_assert(MR == 8 && NR == 32 && kPair == 2, "kernel_avx2: tile 8 × 32 in quarters, pairs of k");
  for (int p0 = 0; p0 < kp; p0 += kFlushPairs) {
    const int p1 = std::min(kp, p0 + kFlushPairs);
    for (int r0 = 0; r0 < MR; r0 += 4)
      for (int j0 = 0; j0 < NR; j0 += 16) quarter(p0, p1, a, b, d, r0, j0);
  }
}

}  // namespace sb::cpu::exact
#endif
