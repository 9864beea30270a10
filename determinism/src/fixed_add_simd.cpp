// The FixedAccumulator add loop in AVX-512 (8 elements per step) and AVX2 (4 per step): the same
// integer arithmetic as fixed_add / fixed_digits in fixed_point.hpp, lane by lane, so the limbs are
// identical to the scalar loop's (tests/unit/test_fixed_accumulator.cpp checks every path).
#include "samebits/det/fixed_accumulator.hpp"

#if defined(SB_HAVE_AVX2)
#include <immintrin.h>
#endif

namespace sb::det::detail {

#if defined(SB_HAVE_AVX512)
// GCC 12's avx512fintrin.h self-initializes its "undefined" vectors, which -Wmaybe-uninitialized
// flags at every inlined intrinsic (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
uint32_t fixed_add_range_avx512(int64_t* limbs, size_t n, const float* x, size_t begin, size_t end,
                                const FixedWindow& w) {
  const __m512i zero = _mm512_setzero_si512();
  const __m512i one = _mm512_set1_epi64(1);
  const __m512i abs_mask = _mm512_set1_epi64(0x7FFFFFFF);
  const __m512i sign_bit = _mm512_set1_epi64(0x80000000);
  const __m512i inf = _mm512_set1_epi64(0x7F800000);
  const __m512i limit = _mm512_set1_epi64(fixed_limit_bits(w));
  const __m512i frac_mask = _mm512_set1_epi64(0x7FFFFF);
  const __m512i implicit = _mm512_set1_epi64(0x800000);
  const __m512i bias = _mm512_set1_epi64(150 + static_cast<int64_t>(w.lsb_exponent));
  const __m512i digit_mask = _mm512_set1_epi64(0xFFFFFFFF);
  const __m512i thirty_one = _mm512_set1_epi64(31);
  __mmask8 nan_seen = 0, inf_seen = 0, over_seen = 0;
  size_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m512i bits = _mm512_cvtepu32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    const __m512i abs = _mm512_and_si512(bits, abs_mask);
    const __mmask8 special = _mm512_cmpge_epu64_mask(abs, inf);
    const __mmask8 nan = _mm512_cmpgt_epu64_mask(abs, inf);
    const __mmask8 over = _mm512_cmpge_epu64_mask(abs, limit) & static_cast<__mmask8>(~special);
    nan_seen |= nan;
    inf_seen |= special & static_cast<__mmask8>(~nan);
    over_seen |= over;
    const __mmask8 valid = static_cast<__mmask8>(~(special | over));
    // |x| = m·2^e; p = e - lsb_exponent.
    const __m512i biased = _mm512_srli_epi64(abs, 23);
    const __mmask8 normal = _mm512_test_epi64_mask(biased, biased);
    const __m512i m =
        _mm512_mask_or_epi64(_mm512_and_si512(abs, frac_mask), normal, _mm512_and_si512(abs, frac_mask), implicit);
    const __m512i p = _mm512_sub_epi64(_mm512_max_epi64(biased, one), bias);
    const __mmask8 inside = _mm512_cmpge_epi64_mask(p, zero);
    // Inside the window: v = m << (p mod 32) at limb p / 32.
    const __m512i v_in = _mm512_sllv_epi64(m, _mm512_and_si512(p, thirty_one));
    const __m512i k = _mm512_maskz_mov_epi64(inside, _mm512_srai_epi64(p, 5));
    // Below it: m >> min(-p, 31), rounded to nearest, ties to even.
    const __m512i sh = _mm512_min_epi64(_mm512_sub_epi64(zero, p), thirty_one);
    const __m512i q = _mm512_srlv_epi64(m, sh);
    const __m512i rest = _mm512_and_si512(m, _mm512_sub_epi64(_mm512_sllv_epi64(one, sh), one));
    const __m512i half = _mm512_sllv_epi64(one, _mm512_sub_epi64(sh, one));
    const __mmask8 up =
        _mm512_cmpgt_epu64_mask(rest, half) | (_mm512_cmpeq_epi64_mask(rest, half) & _mm512_test_epi64_mask(q, one));
    const __m512i v_below = _mm512_mask_add_epi64(q, up, q, one);
    const __m512i v = _mm512_mask_blend_epi64(inside, v_below, v_in);
    const __m512i lo = _mm512_and_si512(v, digit_mask);
    const __m512i hi = _mm512_srli_epi64(v, 32);
    const __mmask8 negative = _mm512_test_epi64_mask(bits, sign_bit);
    for (int j = 0; j < w.limbs; ++j) {
      const __mmask8 at_lo = _mm512_cmpeq_epi64_mask(k, _mm512_set1_epi64(j)) & valid;
      const __mmask8 at_hi = _mm512_cmpeq_epi64_mask(k, _mm512_set1_epi64(j - 1)) & valid;
      __m512i d = _mm512_add_epi64(_mm512_maskz_mov_epi64(at_lo, lo), _mm512_maskz_mov_epi64(at_hi, hi));
      d = _mm512_mask_sub_epi64(d, negative, zero, d);
      int64_t* row = limbs + static_cast<size_t>(j) * n + i;
      _mm512_storeu_si512(row, _mm512_add_epi64(_mm512_loadu_si512(row), d));
    }
  }
  uint32_t status = (nan_seen ? kFixedNaN : 0u) | (inf_seen ? kFixedInf : 0u) | (over_seen ? kFixedOverflow : 0u);
  for (; i < end; ++i) fixed_add(limbs + i, n, x[i], w, &status);
  return status;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

#if defined(SB_HAVE_AVX2)
namespace {
// a >= b for int64 lanes (all-ones / zero lanes).
__m256i cmpge(__m256i a, __m256i b) { return _mm256_xor_si256(_mm256_cmpgt_epi64(b, a), _mm256_set1_epi64x(-1)); }
}  // namespace

uint32_t fixed_add_range_avx2(int64_t* limbs, size_t n, const float* x, size_t begin, size_t end,
                              const FixedWindow& w) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i one = _mm256_set1_epi64x(1);
  const __m256i abs_mask = _mm256_set1_epi64x(0x7FFFFFFF);
  const __m256i inf = _mm256_set1_epi64x(0x7F800000);
  const __m256i limit = _mm256_set1_epi64x(fixed_limit_bits(w));
  const __m256i frac_mask = _mm256_set1_epi64x(0x7FFFFF);
  const __m256i implicit = _mm256_set1_epi64x(0x800000);
  const __m256i bias = _mm256_set1_epi64x(150 + static_cast<int64_t>(w.lsb_exponent));
  const __m256i digit_mask = _mm256_set1_epi64x(0xFFFFFFFF);
  const __m256i thirty_one = _mm256_set1_epi64x(31);
  __m256i nan_seen = zero, inf_seen = zero, over_seen = zero;
  size_t i = begin;
  for (; i + 4 <= end; i += 4) {
    // All values below are non-negative and < 2^63, so signed compares are unsigned ones.
    const __m256i bits = _mm256_cvtepu32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    const __m256i abs = _mm256_and_si256(bits, abs_mask);
    const __m256i special = cmpge(abs, inf);
    const __m256i nan = _mm256_cmpgt_epi64(abs, inf);
    const __m256i over = _mm256_andnot_si256(special, cmpge(abs, limit));
    nan_seen = _mm256_or_si256(nan_seen, nan);
    inf_seen = _mm256_or_si256(inf_seen, _mm256_andnot_si256(nan, special));
    over_seen = _mm256_or_si256(over_seen, over);
    const __m256i valid = _mm256_xor_si256(_mm256_or_si256(special, over), _mm256_set1_epi64x(-1));
    const __m256i biased = _mm256_srli_epi64(abs, 23);
    const __m256i normal = _mm256_cmpgt_epi64(biased, zero);
    const __m256i m = _mm256_or_si256(_mm256_and_si256(abs, frac_mask), _mm256_and_si256(normal, implicit));
    const __m256i p = _mm256_sub_epi64(_mm256_blendv_epi8(one, biased, normal), bias);
    const __m256i inside = cmpge(p, zero);
    const __m256i v_in = _mm256_sllv_epi64(m, _mm256_and_si256(p, thirty_one));
    // p >= 0 where it is used, so a logical shift is p / 32.
    const __m256i k = _mm256_and_si256(inside, _mm256_srli_epi64(p, 5));
    const __m256i minus_p = _mm256_sub_epi64(zero, p);
    const __m256i sh = _mm256_blendv_epi8(minus_p, thirty_one, _mm256_cmpgt_epi64(minus_p, thirty_one));
    const __m256i q = _mm256_srlv_epi64(m, sh);
    const __m256i rest = _mm256_and_si256(m, _mm256_sub_epi64(_mm256_sllv_epi64(one, sh), one));
    const __m256i half = _mm256_sllv_epi64(one, _mm256_sub_epi64(sh, one));
    const __m256i odd = _mm256_cmpeq_epi64(_mm256_and_si256(q, one), one);
    const __m256i up =
        _mm256_or_si256(_mm256_cmpgt_epi64(rest, half), _mm256_and_si256(_mm256_cmpeq_epi64(rest, half), odd));
    const __m256i v_below = _mm256_sub_epi64(q, up);  // up is -1 where rounding up
    const __m256i v = _mm256_blendv_epi8(v_below, v_in, inside);
    const __m256i lo = _mm256_and_si256(_mm256_and_si256(v, digit_mask), valid);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi64(v, 32), valid);
    const __m256i negative = _mm256_cmpgt_epi64(zero, _mm256_slli_epi64(bits, 32));
    for (int j = 0; j < w.limbs; ++j) {
      const __m256i at_lo = _mm256_cmpeq_epi64(k, _mm256_set1_epi64x(j));
      const __m256i at_hi = _mm256_cmpeq_epi64(k, _mm256_set1_epi64x(j - 1));
      __m256i d = _mm256_add_epi64(_mm256_and_si256(at_lo, lo), _mm256_and_si256(at_hi, hi));
      d = _mm256_blendv_epi8(d, _mm256_sub_epi64(zero, d), negative);
      int64_t* row = limbs + static_cast<size_t>(j) * n + i;
      __m256i* ptr = reinterpret_cast<__m256i*>(row);
      _mm256_storeu_si256(ptr, _mm256_add_epi64(_mm256_loadu_si256(ptr), d));
    }
  }
  uint32_t status = (_mm256_testz_si256(nan_seen, nan_seen) ? 0u : kFixedNaN) |
                    (_mm256_testz_si256(inf_seen, inf_seen) ? 0u : kFixedInf) |
                    (_mm256_testz_si256(over_seen, over_seen) ? 0u : kFixedOverflow);
  for (; i < end; ++i) fixed_add(limbs + i, n, x[i], w, &status);
  return status;
}
#endif

}  // namespace sb::det::detail
