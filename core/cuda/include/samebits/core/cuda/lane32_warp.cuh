// The warp forms of the row reductions (docs/CONTRACT.md rules 2 and 6), device only: lane l of a
// warp holds the partial s[l] of det::lane32's lane l; the fixed tree s[l] += s[l+16] (l < 16),
// s[l] += s[l+8] (l < 8), ..., is __shfl_down by 16, 8, 4, 2, 1. Bitwise det::lane32_fold
// (tests/gpu/test_primitives_device.cu). Every lane of the warp must call these together.
#pragma once
#include "samebits/core/ops/softmax.hpp"
#include "samebits/det/lane32.hpp"

namespace sb::cuda {

constexpr unsigned kFullWarp = 0xffffffffu;

// det::lane32_fold of the 32 lanes' partials, returned in every lane. At each width, lane l < width
// adds lane l + width's value to its own, as lane32_fold does; lanes >= width compute values that
// no lane below them reads.
__device__ inline float warp_lane32_fold(float s) {
#pragma unroll
  for (int width = det::kLanes / 2; width >= 1; width /= 2) s = s + __shfl_down_sync(kFullWarp, s, width);
  return __shfl_sync(kFullWarp, s, 0);
}

// The exact maximum (ops::exact_max) of the 32 lanes' values, in every lane. exact_max is
// commutative and associative (a total order with NaN absorbing), so any tree gives the bits of
// the sequential ops::row_max.
__device__ inline float warp_exact_max(float m) {
#pragma unroll
  for (int width = det::kLanes / 2; width >= 1; width /= 2) m = ops::exact_max(m, __shfl_xor_sync(kFullWarp, m, width));
  return m;
}

}  // namespace sb::cuda
