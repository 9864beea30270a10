// The bf16 pair order's AVX2 packer: ops::bf16_pair_operand in 8 lanes by integer rounding (add
// 0x7fff and the kept half's last bit, keep the high half; a NaN's high half quietened; a result
// with a zero exponent as the zero of its sign), so every fp32 gives the scalar packer's bits.
// Where each lane's line is contiguous in k (Lines::along): 16 elements of 8 lanes, then an 8 × 8
// transpose of the pair words; where a pair's lanes are contiguous: 16 rows (8 pairs) across every
// panel, 8 lanes at a time. The rest (k past the last block of 16, lanes past the last 8) by
// pair_word. Compiled by a function attribute and run only where cpuid reports AVX2
// (bf16_pairs_isa.cpp).
#include <algorithm>

#include "bf16_pairs.hpp"

#if defined(__x86_64__)
#include "bf16_pairs_transpose.hpp"

namespace sb::cpu::pairs {
namespace {

#define SB_AVX2 __attribute__((target("avx2,fma"), always_inline)) inline

// ops::bf16_pair_operand of 8 floats, each lane's bf16 bits in its low half.
SB_AVX2 __m256i operand(__m256 v) {
  const __m256i u = _mm256_castps_si256(v), high = _mm256_srli_epi32(u, 16);
  const __m256i lsb = _mm256_and_si256(high, _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i quiet = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
  const __m256i mag = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  const __m256i b = _mm256_blendv_epi8(rounded, quiet, _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000)));
  const __m256i tiny = _mm256_cmpeq_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x7f80)), _mm256_setzero_si256());
  return _mm256_andnot_si256(_mm256_and_si256(tiny, _mm256_set1_epi32(0x7fff)), b);
}

// The 8 pair words of 16 contiguous elements: element 2q low and 2q + 1 high in word q.
SB_AVX2 __m256i pairs_of(const float* x) {
  const __m256i lo = operand(_mm256_loadu_ps(x)), hi = operand(_mm256_loadu_ps(x + 8));
  return _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8);  // packus interleaves 128-bit halves
}

SB_AVX2 void store(uint32_t* out, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), v); }

#undef SB_AVX2

__attribute__((target("avx2,fma"))) void along(const Lines& src, int w, uint32_t* out) {
  const int kp = (src.k + 1) / 2, kb = src.k / 16 * 8;  // kb: pairs in whole blocks of 16 elements
  for (int l0 = 0; l0 < src.panels(w) * w; l0 += 8) {   // 8 lanes of one panel along all of k
    uint32_t* o = out + src.at(w, l0, 0);
    for (int pp0 = 0; pp0 < kb; pp0 += 8) {
      __m256i v[8];
      for (int r = 0; r < 8; ++r)
        v[r] = l0 + r < src.lanes ? pairs_of(src.x + (l0 + r) * src.ld + 2 * static_cast<size_t>(pp0))
                                  : _mm256_setzero_si256();
      transpose8(v);
      for (int q = 0; q < 8; ++q) store(o + static_cast<size_t>(pp0 + q) * w, v[q]);
    }
    for (int r = 0; r < 8; ++r) {
      const float* line = l0 + r < src.lanes ? src.x + (l0 + r) * src.ld : nullptr;
      for (int pp = kb; pp < kp; ++pp)
        o[static_cast<size_t>(pp) * w + r] = line != nullptr ? pair_word(line, 1, pp, src.k, src.pad) : 0;
    }
  }
}

__attribute__((target("avx2,fma"))) void across(const Lines& src, int w, uint32_t* out) {
  const int kp = (src.k + 1) / 2, whole = src.lanes / 8 * 8, all = src.panels(w) * w;
  // 8 pairs (16 rows) at a time, read across every panel, 8 lanes at a time: each panel gets 8
  // consecutive pairs of words, and no more than 16 rows are in flight.
  for (int pp0 = 0; pp0 < kp; pp0 += 8) {
    const int pp1 = std::min(kp, pp0 + 8);
    for (int l0 = 0; l0 < whole; l0 += 8) {
      for (int pp = pp0; pp < pp1; ++pp) {
        const float* even = src.x + 2 * static_cast<size_t>(pp) * src.ld + l0;
        const __m256i e = operand(_mm256_loadu_ps(even));
        const __m256i h = 2 * pp + 1 < src.k ? operand(_mm256_loadu_ps(even + src.ld)) : _mm256_set1_epi32(src.pad);
        store(out + src.at(w, l0, pp), _mm256_or_si256(_mm256_slli_epi32(h, 16), e));
      }
    }
    for (int l = whole; l < all; ++l)
      for (int pp = pp0; pp < pp1; ++pp)
        out[src.at(w, l, pp)] = l < src.lanes ? pair_word(src.x + l, src.ld, pp, src.k, src.pad) : 0;
  }
}

}  // namespace

void pack_avx2(const Lines& src, int w, uint32_t* out) {
  static_assert(MR % 8 == 0 && NR % 8 == 0, "pack_avx2: panels of whole 8-lane groups");
  if (src.along) along(src, w, out);
  else across(src, w, out);
}

}  // namespace sb::cpu::pairs
#endif
