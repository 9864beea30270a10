// Rotary positions on the GPU: one thread per pair; the formula is ops/rope.hpp, bitwise
// core/cpu/rope.cpp. In place on qkv's q and k.
#include "cuda_backend_class.hpp"
#include "elementwise.cuh"
#include "samebits/core/ops/rope.hpp"

namespace sb::cuda {
namespace {

// Pair i of head h (q's heads, then k's) of token n: element index ((n·2NH) + h)·half + i.
template <bool kBackward>
struct Rotate {
  float* qkv;          // (B, T, 3C)
  const float* table;  // (T, hd/2, 2)
  int T, C, NH, half;
  __device__ void operator()(int64_t e) const {
    const int64_t i = e % half, head = (e / half) % (2 * NH), n = e / (int64_t(half) * 2 * NH);
    float* lo = qkv + n * 3 * C + head * 2 * half + i;
    float* hi = lo + half;
    const float* cs = table + (n % T) * 2 * half + 2 * i;
    const float x = *lo, y = *hi, c = cs[0], s = cs[1];
    *lo = kBackward ? ops::rope_low_backward(x, y, c, s) : ops::rope_low(x, y, c, s);
    *hi = kBackward ? ops::rope_high_backward(x, y, c, s) : ops::rope_high(x, y, c, s);
  }
};

}  // namespace

void CudaBackend::rope_forward(float* qkv, const float* table, int B, int T, int C, int NH) {
  activate();
  const int half = C / NH / 2;
  for_each(*this, int64_t(B) * T * 2 * NH * half, Rotate<false>{qkv, table, T, C, NH, half});
}

void CudaBackend::rope_backward(float* dqkv, const float* table, int B, int T, int C, int NH) {
  activate();
  const int half = C / NH / 2;
  for_each(*this, int64_t(B) * T * 2 * NH * half, Rotate<true>{dqkv, table, T, C, NH, half});
}

}  // namespace sb::cuda
