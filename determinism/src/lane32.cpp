// Host forms of the 32-lane row reduction (lane32.hpp): AVX-512 as two 16-wide vectors, AVX2 as
// four 8-wide vectors, else the scalar definition (SAMEBITS_ISA picks one at run time). Vector lane l is reduction lane
// l; the tail only touches the lanes that own an element, and the fold is the scalar lane32_fold, so every form gives
// the bits of lane32_sum_ref / lane32_dot_ref (tests/unit/test_lane32.cpp).
#include "samebits/det/lane32.hpp"

#include <cstddef>
#include <cstdlib>
#include <string>
#if defined(SB_HAVE_AVX2)
#include <immintrin.h>
#endif

namespace sb::det {

namespace detail {

#if defined(SB_HAVE_AVX2)
namespace {
// Lanes [0, count) of an 8-wide vector (all lanes when count >= 8).
__m256i lanes_below(std::ptrdiff_t count) {
  const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int clamped = count > 8 ? 8 : static_cast<int>(count);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(clamped), index);
}

template <bool kDot>
float lane32_avx2(const float* x, const float* y, size_t n) {
  __m256 s[4];
  for (int v = 0; v < 4; ++v) s[v] = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int v = 0; v < 4; ++v) {
      const __m256 a = _mm256_loadu_ps(x + i + 8 * v);
      s[v] = kDot ? _mm256_fmadd_ps(a, _mm256_loadu_ps(y + i + 8 * v), s[v]) : _mm256_add_ps(s[v], a);
    }
  }
  const std::ptrdiff_t rest = static_cast<std::ptrdiff_t>(n - i);
  for (int v = 0; v < 4 && 8 * v < rest; ++v) {
    const __m256i mask = lanes_below(rest - 8 * v);
    const __m256 a = _mm256_maskload_ps(x + i + 8 * v, mask);
    const __m256 t = kDot ? _mm256_fmadd_ps(a, _mm256_maskload_ps(y + i + 8 * v, mask), s[v]) : _mm256_add_ps(s[v], a);
    s[v] = _mm256_blendv_ps(s[v], t, _mm256_castsi256_ps(mask));
  }
  float lanes[kLanes];
  for (int v = 0; v < 4; ++v) _mm256_storeu_ps(lanes + 8 * v, s[v]);
  return lane32_fold(lanes);
}
}  // namespace

float lane32_sum_avx2(const float* x, size_t n) { return lane32_avx2<false>(x, nullptr, n); }
float lane32_dot_avx2(const float* x, const float* y, size_t n) { return lane32_avx2<true>(x, y, n); }
#endif

#if defined(SB_HAVE_AVX512)
namespace {
template <bool kDot>
float lane32_avx512(const float* x, const float* y, size_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m512 a0 = _mm512_loadu_ps(x + i), a1 = _mm512_loadu_ps(x + i + 16);
    if constexpr (kDot) {
      s0 = _mm512_fmadd_ps(a0, _mm512_loadu_ps(y + i), s0);
      s1 = _mm512_fmadd_ps(a1, _mm512_loadu_ps(y + i + 16), s1);
    } else {
      s0 = _mm512_add_ps(s0, a0);
      s1 = _mm512_add_ps(s1, a1);
    }
  }
  const size_t rest = n - i;  // < 32: lanes [0, rest) own one more element
  if (rest > 0) {
    const __mmask16 m0 = static_cast<__mmask16>(rest >= 16 ? 0xFFFF : (1u << rest) - 1);
    const __mmask16 m1 = static_cast<__mmask16>(rest <= 16 ? 0 : (1u << (rest - 16)) - 1);
    const __m512 a0 = _mm512_maskz_loadu_ps(m0, x + i), a1 = _mm512_maskz_loadu_ps(m1, x + i + 16);
    if constexpr (kDot) {
      s0 = _mm512_mask3_fmadd_ps(a0, _mm512_maskz_loadu_ps(m0, y + i), s0, m0);
      s1 = _mm512_mask3_fmadd_ps(a1, _mm512_maskz_loadu_ps(m1, y + i + 16), s1, m1);
    } else {
      s0 = _mm512_mask_add_ps(s0, m0, s0, a0);
      s1 = _mm512_mask_add_ps(s1, m1, s1, a1);
    }
  }
  float lanes[kLanes];
  _mm512_storeu_ps(lanes, s0);
  _mm512_storeu_ps(lanes + 16, s1);
  return lane32_fold(lanes);
}
}  // namespace

float lane32_sum_avx512(const float* x, size_t n) { return lane32_avx512<false>(x, nullptr, n); }
float lane32_dot_avx512(const float* x, const float* y, size_t n) { return lane32_avx512<true>(x, y, n); }
#endif

}  // namespace detail

namespace {

enum class Path : unsigned char { ref, avx2, avx512 };

// The build's fastest form, or the one SAMEBITS_ISA=scalar|avx2|avx512 names (every form gives the
// same bits, so one machine can run another CPU's path; the exact GEMM's oneDNN and AMX paths, and
// a form this build lacks, leave the fastest). Read once per process.
Path choose() {
  const char* forced = std::getenv("SAMEBITS_ISA");
  const std::string name = forced != nullptr ? forced : "";
  if (name == "scalar") return Path::ref;
#if defined(SB_HAVE_AVX2)
  if (name == "avx2") return Path::avx2;
#endif
#if defined(SB_HAVE_AVX512)
  return Path::avx512;
#elif defined(SB_HAVE_AVX2)
  return Path::avx2;
#else
  return Path::ref;
#endif
}

Path path() {
  static const Path chosen = choose();
  return chosen;
}

}  // namespace

float lane32_sum(const float* x, size_t n) {
  switch (path()) {
#if defined(SB_HAVE_AVX512)
    case Path::avx512: return detail::lane32_sum_avx512(x, n);
#endif
#if defined(SB_HAVE_AVX2)
    case Path::avx2: return detail::lane32_sum_avx2(x, n);
#endif
    default: return lane32_sum_ref(x, n);
  }
}

float lane32_dot(const float* x, const float* y, size_t n) {
  switch (path()) {
#if defined(SB_HAVE_AVX512)
    case Path::avx512: return detail::lane32_dot_avx512(x, y, n);
#endif
#if defined(SB_HAVE_AVX2)
    case Path::avx2: return detail::lane32_dot_avx2(x, y, n);
#endif
    default: return lane32_dot_ref(x, y, n);
  }
}

float lane32_sumsq(const float* x, size_t n) { return lane32_dot(x, x, n); }

}  // namespace sb::det
