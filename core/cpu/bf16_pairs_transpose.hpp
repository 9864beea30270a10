// The 8 × 8 transpose of 32-bit words that the AVX2 and AVX-512 bf16 pair packers share (AVX2
// shuffles, inlined into functions compiled for AVX2 or AVX-512F). No arithmetic.
#pragma once
#if defined(__x86_64__)
#include "gemm_simd.hpp"

namespace sb::cpu::pairs {

// v[r][c] ← v[c][r].
__attribute__((target("avx2"), always_inline)) inline void transpose8(__m256i* v) {
  __m256i t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_epi32(v[i], v[i + 1]);
    t[i + 1] = _mm256_unpackhi_epi32(v[i], v[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
    u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
    u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
    u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x20);
    v[i + 4] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x31);
  }
}

}  // namespace sb::cpu::pairs
#endif
