// The bf16 pair order emulated in AVX2 + FMA (8 fp32 lanes): ops::bf16_pair_step lane by lane, as
// bf16_pairs_kernel_avx512.cpp with blends for masks; one row and 8 columns of the tile at a time.
// Compiled by a function attribute and run only where cpuid reports AVX2 (bf16_pairs_isa.cpp).
#include "bf16_pairs.hpp"

#if defined(__x86_64__)
#include "gemm_simd.hpp"

namespace sb::cpu::pairs {
namespace {

#define SB_AVX2 __attribute__((target("avx2,fma"), always_inline)) inline

// Lanes of x (unsigned magnitudes below 2^31) below y, as all-ones masks.
SB_AVX2 __m256i below(__m256i x, __m256i y) { return _mm256_cmpgt_epi32(y, x); }

// ops::bf16_pair_step in 8 lanes.
SB_AVX2 __m256 step(__m256 acc, __m256 a, __m256 b) {
  const __m256 r = _mm256_fmadd_ps(a, b, acc);
  const __m256i bits = _mm256_castps_si256(r), min = _mm256_set1_epi32(0x00800000);
  const __m256i mag = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
  __m256i flush = below(mag, min);
  const __m256i edge = _mm256_cmpeq_epi32(mag, min);
  if (!_mm256_testz_si256(edge, edge)) {
    const __m256 scale = _mm256_set1_ps(0x1p64f);
    const __m256 s = _mm256_fmadd_ps(_mm256_mul_ps(a, scale), b, _mm256_mul_ps(acc, scale));
    const __m256i s_mag = _mm256_and_si256(_mm256_castps_si256(s), _mm256_set1_epi32(0x7fffffff));
    flush = _mm256_or_si256(flush, _mm256_and_si256(edge, below(s_mag, _mm256_set1_epi32(0x20800000))));
  }
  const __m256i sign = _mm256_and_si256(bits, _mm256_set1_epi32(static_cast<int>(0x80000000u)));
  return _mm256_castsi256_ps(_mm256_blendv_epi8(bits, sign, flush));
}

SB_AVX2 __m256 odd_half(__m256i x) {
  return _mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
}
SB_AVX2 __m256 even_half(__m256i x) { return _mm256_castsi256_ps(_mm256_slli_epi32(x, 16)); }

#undef SB_AVX2

}  // namespace

__attribute__((target("avx2,fma"))) void kernel_avx2(int kp, const uint32_t* a, const uint32_t* b, float* tile) {
  static_assert(NR % 8 == 0, "kernel_avx2: 8 columns at a time");
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < NR; j += 8) {
      __m256 acc = _mm256_loadu_ps(tile + r * NR + j);
      for (int p = 0; p < kp; ++p) {
        const __m256i bv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + static_cast<size_t>(p) * NR + j));
        const __m256i av = _mm256_set1_epi32(static_cast<int>(a[static_cast<size_t>(p) * MR + r]));
        acc = step(step(acc, odd_half(av), odd_half(bv)), even_half(av), even_half(bv));
      }
      _mm256_storeu_ps(tile + r * NR + j, acc);
    }
  }
}

}  // namespace sb::cpu::pairs
#endif
