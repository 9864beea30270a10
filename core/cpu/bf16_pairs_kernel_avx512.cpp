// The bf16 pair order emulated in AVX-512F (16 fp32 lanes), for CPUs without AVX512-BF16: each
// step is ops::bf16_pair_step lane by lane — one fma, a flush of results below 2^-126, and where a
// lane rounded to ±2^-126 the fma scaled by 2^64 decides (the same bits: test_bf16_pairs). Compiled
// by a function attribute and run only where cpuid reports AVX-512F (bf16_pairs_isa.cpp).
#include "bf16_pairs.hpp"

#if defined(__x86_64__)
#include "gemm_simd.hpp"

// GCC 12's false -Wmaybe-uninitialized from the AVX-512 shift intrinsics inlined here (GCC bug
// 105593, as gemm_simd.hpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace sb::cpu::pairs {
namespace {

#define SB_AVX512 __attribute__((target("avx512f"), always_inline)) inline

// ops::bf16_pair_step in 16 lanes.
SB_AVX512 __m512 step(__m512 acc, __m512 a, __m512 b) {
  const __m512 r = _mm512_fmadd_ps(a, b, acc);
  const __m512i bits = _mm512_castps_si512(r), min = _mm512_set1_epi32(0x00800000);
  const __m512i mag = _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff));
  __mmask16 flush = _mm512_cmplt_epu32_mask(mag, min);
  const __mmask16 edge = _mm512_cmpeq_epi32_mask(mag, min);
  if (edge != 0) {
    const __m512 scale = _mm512_set1_ps(0x1p64f);
    const __m512 s = _mm512_fmadd_ps(_mm512_mul_ps(a, scale), b, _mm512_mul_ps(acc, scale));
    const __m512i s_mag = _mm512_and_si512(_mm512_castps_si512(s), _mm512_set1_epi32(0x7fffffff));
    flush |= edge & _mm512_cmplt_epu32_mask(s_mag, _mm512_set1_epi32(0x20800000));  // |s| < 2^-62
  }
  return _mm512_castsi512_ps(
      _mm512_mask_and_epi32(bits, flush, bits, _mm512_set1_epi32(static_cast<int>(0x80000000u))));
}

SB_AVX512 __m512 odd_half(__m512i x) {
  return _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}
SB_AVX512 __m512 even_half(__m512i x) { return _mm512_castsi512_ps(_mm512_slli_epi32(x, 16)); }

#undef SB_AVX512

}  // namespace

__attribute__((target("avx512f"))) void kernel_avx512(int kp, const uint32_t* a, const uint32_t* b, float* tile) {
  static_assert(MR == 8 && NR == 32, "kernel_avx512: tile 8 × 32");
  __m512 acc[MR][2];
  for (int r = 0; r < MR; ++r) {
    acc[r][0] = _mm512_loadu_ps(tile + r * NR);
    acc[r][1] = _mm512_loadu_ps(tile + r * NR + 16);
  }
  for (int p = 0; p < kp; ++p) {
    const uint32_t* bp = b + static_cast<size_t>(p) * NR;
    const __m512i b0 = _mm512_loadu_si512(bp), b1 = _mm512_loadu_si512(bp + 16);
    const __m512 b0_odd = odd_half(b0), b0_even = even_half(b0), b1_odd = odd_half(b1), b1_even = even_half(b1);
    const uint32_t* ap = a + static_cast<size_t>(p) * MR;
    for (int r = 0; r < MR; ++r) {
      const __m512i av = _mm512_set1_epi32(static_cast<int>(ap[r]));
      const __m512 a_odd = odd_half(av), a_even = even_half(av);
      acc[r][0] = step(step(acc[r][0], a_odd, b0_odd), a_even, b0_even);
      acc[r][1] = step(step(acc[r][1], a_odd, b1_odd), a_even, b1_even);
    }
  }
  for (int r = 0; r < MR; ++r) {
    _mm512_storeu_ps(tile + r * NR, acc[r][0]);
    _mm512_storeu_ps(tile + r * NR + 16, acc[r][1]);
  }
}

}  // namespace sb::cpu::pairs
#pragma GCC diagnostic pop
#endif
