// The canonical GEMM's AVX-512 micro-kernel (8 × 32 register tile): one fma chain per C element
// over k ascending (rule 1), bitwise equal to gemm_kernel_scalar.hpp and gemm_kernel_avx2.hpp.
// Included by gemm_tile.hpp only, in an AVX-512 build.
#pragma once
#include "gemm_simd.hpp"

namespace sb::cpu::gemm {

constexpr int MR = 8, NR = 32;

template <ALayout L>
inline void micro_kernel(int kc, const float* ap, int as, const float* bp, float* c, int ldc, bool load) {
  __m512 acc[MR][2];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    acc[r][0] = load ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
    acc[r][1] = load ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();
  }
  for (int p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_loadu_ps(bp + p * NR);
    const __m512 b1 = _mm512_loadu_ps(bp + p * NR + 16);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512 a = _mm512_set1_ps(ap[a_index<L>(p, r, as)]);
      acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm512_storeu_ps(c + r * ldc, acc[r][0]);
    _mm512_storeu_ps(c + r * ldc + 16, acc[r][1]);
  }
}

}  // namespace sb::cpu::gemm
