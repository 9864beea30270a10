// The 32-lane row reduction of docs/CONTRACT.md rule 2, host and device, one definition.
// Lane l (0..31) accumulates elements l, l+32, l+64, ... in ascending order from +0; then the fixed
// tree s[l] += s[l+16] (l<16), s[l] += s[l+8] (l<8), ..., s[0] += s[1]. A warp, four AVX2 vectors
// or this plain loop give the same bits (tests/unit/test_lane32.cpp).
#pragma once
#include <cstddef>

#include "samebits/det/hd.hpp"

namespace sb::det {

constexpr int kLanes = 32;

// Fold 32 lane partials with the fixed tree; result is lane 0.
SB_HD float lane32_fold(float s[kLanes]) {
  for (int width = kLanes / 2; width >= 1; width /= 2) {
    for (int l = 0; l < width; ++l) s[l] = s[l] + s[l + width];
  }
  return s[0];
}

// Σ x[i], i in [0, n): the scalar definition.
SB_HD float lane32_sum_ref(const float* x, size_t n) {
  float s[kLanes];
  for (int l = 0; l < kLanes; ++l) s[l] = 0.0f;
  for (size_t i = 0; i < n; ++i) s[i % kLanes] = s[i % kLanes] + x[i];
  return lane32_fold(s);
}

// The lanes of a longer row continued over its elements first … first+n−1 (x = those elements):
// element first+i goes into lane (first+i) % 32, in ascending order. Each lane's chain is the
// row's chain restricted to these elements, so continuing over consecutive ranges [0, a), [a, b),
// … from +0 and folding once is lane32_sum_ref of the whole row, bit for bit, wherever the ranges
// are cut: the vocabulary-parallel cross-entropy passes these 32 partials from rank to rank.
// Written as whole 32-element blocks between a head and a tail so that the blocks vectorise (the
// same additions per lane, in the same order).
SB_HD void lane32_continue(float s[kLanes], const float* x, size_t n, size_t first) {
  size_t i = 0;
  for (; i < n && (first + i) % kLanes != 0; ++i) s[(first + i) % kLanes] = s[(first + i) % kLanes] + x[i];
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) s[l] = s[l] + x[i + size_t(l)];
  }
  for (; i < n; ++i) s[(first + i) % kLanes] = s[(first + i) % kLanes] + x[i];
}

// Σ x[i]·y[i] with one fma per element into its lane (the sum of squares is lane32_dot(x, x)).
SB_HD float lane32_dot_ref(const float* x, const float* y, size_t n) {
  float s[kLanes];
  for (int l = 0; l < kLanes; ++l) s[l] = 0.0f;
  for (size_t i = 0; i < n; ++i) s[i % kLanes] = fma_f32(x[i], y[i], s[i % kLanes]);
  return lane32_fold(s);
}

// Host entry points: the widest SIMD this build has (AVX2 / AVX-512) or the scalar definition;
// SAMEBITS_ISA=scalar|avx2|avx512 runs another (the same bits: one machine shows another CPU's path).
float lane32_sum(const float* x, size_t n);
float lane32_dot(const float* x, const float* y, size_t n);
float lane32_sumsq(const float* x, size_t n);

namespace detail {
// Each SIMD form the build has, callable on its own so the tests compare every one with the
// definition (on an AVX-512 build both exist).
#if defined(SB_HAVE_AVX2)
float lane32_sum_avx2(const float* x, size_t n);
float lane32_dot_avx2(const float* x, const float* y, size_t n);
#endif
#if defined(SB_HAVE_AVX512)
float lane32_sum_avx512(const float* x, size_t n);
float lane32_dot_avx512(const float* x, const float* y, size_t n);
#endif
}  // namespace detail

}  // namespace sb::det
