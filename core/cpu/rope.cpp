// Rotary positions on the CPU: OpenMP threads over tokens, SIMD lanes over a head's pairs; the
// formula is ops/rope.hpp, bitwise equal to core/cuda/rope.cu. In place on qkv's q and k.
#include "samebits/core/ops/rope.hpp"
#include "cpu_backend_class.hpp"

namespace sb::cpu {
namespace {

// The pairs (lo[i], hi[i]) of one head rotated by the (cos, sin) rows cs (half pairs, interleaved).
template <bool kBackward>
[[gnu::flatten]] void rotate_head(float* lo, float* hi, const float* cs, int half) {
#pragma omp simd
  for (int i = 0; i < half; ++i) {
    const float x = lo[i], y = hi[i], c = cs[2 * i], s = cs[2 * i + 1];
    lo[i] = kBackward ? ops::rope_low_backward(x, y, c, s) : ops::rope_low(x, y, c, s);
    hi[i] = kBackward ? ops::rope_high_backward(x, y, c, s) : ops::rope_high(x, y, c, s);
  }
}

template <bool kBackward>
void rotate(float* qkv, const float* table, int B, int T, int C, int NH) {
  const int hd = C / NH, half = hd / 2;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < B * T; ++n) {
    const float* cs = table + static_cast<size_t>(n % T) * hd;
    float* row = qkv + static_cast<size_t>(n) * 3 * C;
    for (int h = 0; h < 2 * NH; ++h) {  // q's heads, then k's
      float* head = row + static_cast<size_t>(h) * hd;
      rotate_head<kBackward>(head, head + half, cs, half);
    }
  }
}

}  // namespace

void CpuBackend::rope_forward(float* qkv, const float* table, int B, int T, int C, int NH) {
  rotate<false>(qkv, table, B, T, C, NH);
}

void CpuBackend::rope_backward(float* dqkv, const float* table, int B, int T, int C, int NH) {
  rotate<true>(dqkv, table, B, T, C, NH);
}

}  // namespace sb::cpu
