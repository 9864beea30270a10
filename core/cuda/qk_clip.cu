// QK-clip's two ops on the GPU (Backend::qk_max_keys, qk_clip_scale; formulas in ops/qk_clip.hpp),
// bitwise equal to core/cpu/qk_clip.cpp for any launch: one thread per query row (b, h, t) takes
// ops::qk_row_max_key (the forward's canonical dots) and folds it into its head's key with an
// integer atomicMax — exact and order-free, so the key is the same for any block size, grid and
// scheduling (no float atomics). The scaling is elementwise, one thread per element.
#include "cuda_backend_class.hpp"
#include "elementwise.cuh"
#include "samebits/core/ops/attention.hpp"
#include "samebits/core/ops/qk_clip.hpp"

namespace sb::cuda {
namespace {

struct QkRowMax {
  int32_t* keys;     // (NH)
  const float* qkv;  // (B, T, 3C)
  int T, C, NH;
  __device__ void operator()(int64_t row) const {  // row = (b·NH + h)·T + t
    const int t = static_cast<int>(row % T);
    const int64_t bh = row / T, b = bh / NH;
    const int h = static_cast<int>(bh % NH), hs = C / NH;
    const ptrdiff_t ld = 3 * static_cast<ptrdiff_t>(C);
    const float* q0 = qkv + b * T * ld + h * hs;  // (T, ld): the head's q rows; its k rows at + C
    atomicMax(keys + h, ops::qk_row_max_key(q0 + t * ld, q0 + C, ld, t, hs, ops::attention_scale(hs)));
  }
};

struct QkScale {
  float* x;  // (n)
  float factor;
  __device__ void operator()(int64_t i) const { x[i] = ops::qk_clip_apply(x[i], factor); }
};

}  // namespace

void CudaBackend::qk_max_keys(int32_t* keys, const float* qkv, int B, int T, int C, int NH) {
  activate();
  for_each(*this, static_cast<int64_t>(B) * NH * T, QkRowMax{keys, qkv, T, C, NH});
}

void CudaBackend::qk_clip_scale(float* x, int64_t n, float factor) {
  activate();
  for_each(*this, n, QkScale{x, factor});
}

}  // namespace sb::cuda
