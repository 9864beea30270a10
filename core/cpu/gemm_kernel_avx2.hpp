// The canonical GEMM's AVX2 micro-kernel (6 × 16 register tile): one fma chain per C element over
// k ascending (rule 1), bitwise equal to gemm_kernel_scalar.hpp and gemm_kernel_avx512.hpp.
// Included by gemm_tile.hpp only, in an AVX2 build.
#pragma once
#include "gemm_simd.hpp"

namespace sb::cpu::gemm {

constexpr int MR = 6, NR = 16;

template <ALayout L>
inline void micro_kernel(int kc, const float* ap, int as, const float* bp, float* c, int ldc, bool load) {
  __m256 acc[MR][2];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    acc[r][0] = load ? _mm256_loadu_ps(c + r * ldc) : _mm256_setzero_ps();
    acc[r][1] = load ? _mm256_loadu_ps(c + r * ldc + 8) : _mm256_setzero_ps();
  }
  for (int p = 0; p < kc; ++p) {
    const __m256 b0 = _mm256_loadu_ps(bp + p * NR);
    const __m256 b1 = _mm256_loadu_ps(bp + p * NR + 8);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256 a = _mm256_broadcast_ss(ap + a_index<L>(p, r, as));
      acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm256_storeu_ps(c + r * ldc, acc[r][0]);
    _mm256_storeu_ps(c + r * ldc + 8, acc[r][1]);
  }
}

}  // namespace sb::cpu::gemm
