// The bf16 pair order's AVX-512 packer: ops::bf16_pair_operand in 16 lanes by integer rounding, as
// bf16_pairs_pack_avx2.cpp, with masked loads and stores for every tail. Where each lane's line is
// contiguous in k (Lines::along): 16 elements of 8 lanes narrowed to 8 pair words each, then an
// 8 × 8 transpose; past k the loads read the pad (a bf16 zero, so its fp32 is its own operand),
// and no word past the last pair is stored. Where a pair's lanes are contiguous: 16 rows (8 pairs)
// across every panel, 16 lanes at a time. Compiled by a function attribute and run only where
// cpuid reports AVX-512F (bf16_pairs_isa.cpp).
#include <algorithm>

#include "bf16_pairs.hpp"

#if defined(__x86_64__)
#include "bf16_pairs_transpose.hpp"
#include "samebits/det/bits.hpp"

// GCC 12's false -Wmaybe-uninitialized from the AVX-512 intrinsics inlined here (GCC bug 105593, as
// gemm_simd.hpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace sb::cpu::pairs {
namespace {

#define SB_AVX512 __attribute__((target("avx512f"), always_inline)) inline

// ops::bf16_pair_operand of 16 floats, each lane's bf16 bits in its low half.
SB_AVX512 __m512i operand(__m512 v) {
  const __m512i u = _mm512_castps_si512(v), high = _mm512_srli_epi32(u, 16);
  const __m512i lsb = _mm512_and_si512(high, _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __m512i mag = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(mag, _mm512_set1_epi32(0x7f800000));
  const __m512i b = _mm512_mask_or_epi32(rounded, nan, high, _mm512_set1_epi32(0x40));
  const __mmask16 tiny = _mm512_testn_epi32_mask(b, _mm512_set1_epi32(0x7f80));
  return _mm512_mask_and_epi32(b, tiny, b, _mm512_set1_epi32(0x8000));
}

// The first n lanes (0 … 16).
SB_AVX512 __mmask16 first(int n) { return static_cast<__mmask16>(n >= 16 ? 0xffffu : (1u << std::max(n, 0)) - 1); }

#undef SB_AVX512

__attribute__((target("avx512f"))) void along(const Lines& src, int w, uint32_t* out) {
  const int kp = (src.k + 1) / 2;
  const __m512 pad = _mm512_set1_ps(det::float_of_bits(uint32_t{src.pad} << 16));
  for (int l0 = 0; l0 < src.panels(w) * w; l0 += 8) {  // 8 lanes of one panel along all of k
    uint32_t* o = out + src.at(w, l0, 0);
    for (int pp0 = 0; pp0 < kp; pp0 += 8) {
      const size_t p0 = 2 * static_cast<size_t>(pp0);
      const __mmask16 in_k = first(src.k - static_cast<int>(p0));
      __m256i v[8];
      for (int r = 0; r < 8; ++r) {
        v[r] = _mm256_setzero_si256();
        if (l0 + r >= src.lanes) continue;
        const __m512 x = _mm512_mask_loadu_ps(pad, in_k, src.x + (l0 + r) * src.ld + p0);
        v[r] = _mm512_cvtepi32_epi16(operand(x));  // element 2q low, 2q + 1 high in word q
      }
      transpose8(v);
      for (int q = 0; q < std::min(8, kp - pp0); ++q)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + static_cast<size_t>(pp0 + q) * w), v[q]);
    }
  }
}

__attribute__((target("avx512f"))) void across(const Lines& src, int w, uint32_t* out) {
  const int kp = (src.k + 1) / 2, all = src.panels(w) * w;
  // 8 pairs (16 rows) at a time, read across every panel, 16 lanes at a time: each panel gets 8
  // consecutive pairs of words, and no more than 16 rows are in flight.
  for (int pp0 = 0; pp0 < kp; pp0 += 8) {
    for (int l0 = 0; l0 < all; l0 += 16) {
      const __mmask16 valid = first(src.lanes - l0);
      for (int pp = pp0; pp < std::min(kp, pp0 + 8); ++pp) {
        const float* even = src.x + 2 * static_cast<size_t>(pp) * src.ld;
        const bool odd = 2 * pp + 1 < src.k;
        const __m512i e = operand(_mm512_maskz_loadu_ps(valid, even + l0));
        const __m512i h =
            odd ? operand(_mm512_maskz_loadu_ps(valid, even + src.ld + l0)) : _mm512_maskz_set1_epi32(valid, src.pad);
        const __m512i v = _mm512_or_si512(_mm512_slli_epi32(h, 16), e);
        // Two halves of 8 lanes, each within one panel (w is a multiple of 8).
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + src.at(w, l0, pp)), _mm512_castsi512_si256(v));
        if (l0 + 8 < all)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + src.at(w, l0 + 8, pp)), _mm512_extracti64x4_epi64(v, 1));
      }
    }
  }
}

}  // namespace

void pack_avx512(const Lines& src, int w, uint32_t* out) {
  static_assert(MR % 8 == 0 && NR % 8 == 0, "pack_avx512: panels of whole 8-lane groups");
  if (src.along) along(src, w, out);
  else across(src, w, out);
}

}  // namespace sb::cpu::pairs
#pragma GCC diagnostic pop
#endif
