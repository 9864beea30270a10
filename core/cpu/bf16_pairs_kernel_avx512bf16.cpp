// The bf16 pair order's native kernel: vdpbf16ps (_mm512_dpbf16_ps), 16 accumulators for the 8 × 32
// tile, one instruction per row and half-tile per pair of k. Compiled for AVX512-BF16 by a function
// attribute and run only where cpuid reports it and selftest's instruction check agrees with the
// emulation (bf16_pairs_isa.cpp).
#include "bf16_pairs.hpp"

#if defined(__x86_64__)
#include "gemm_simd.hpp"

namespace sb::cpu::pairs {

__attribute__((target("avx512f,avx512bf16"))) void kernel_avx512bf16(int kp, const uint32_t* a, const uint32_t* b,
                                                                     float* tile) {
  static_assert(MR == 8 && NR == 32, "kernel_avx512bf16: tile 8 × 32");
  __m512 acc[MR][2];
  for (int r = 0; r < MR; ++r) {
    acc[r][0] = _mm512_loadu_ps(tile + r * NR);
    acc[r][1] = _mm512_loadu_ps(tile + r * NR + 16);
  }
  for (int p = 0; p < kp; ++p) {
    const uint32_t* bp = b + static_cast<size_t>(p) * NR;
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + 16);
    const uint32_t* ap = a + static_cast<size_t>(p) * MR;
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(ap[r]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
    }
  }
  for (int r = 0; r < MR; ++r) {
    _mm512_storeu_ps(tile + r * NR, acc[r][0]);
    _mm512_storeu_ps(tile + r * NR + 16, acc[r][1]);
  }
}

}  // namespace sb::cpu::pairs
#endif
