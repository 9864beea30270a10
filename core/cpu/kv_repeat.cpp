// Grouped-query attention's key/value heads on the CPU: OpenMP over tokens; the index map and the
// backward's chain are ops/kv_repeat.hpp, bitwise equal to core/cuda/kv_repeat.cu.
#include <algorithm>

#include "cpu_backend_class.hpp"
#include "samebits/core/ops/kv_repeat.hpp"

namespace sb::cpu {

void CpuBackend::kv_repeat_forward(float* out, const float* qkv, int N, int NH, int G, int hd) {
  const int64_t W = int64_t{NH + 2 * G} * hd, M = 3 * int64_t{NH} * hd;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* in = qkv + n * W;
    float* row = out + n * M;
    for (int64_t c = 0; c < M; c += hd) {  // head by head: a head's hd columns are contiguous
      const float* from = in + ops::kv_repeat_source(c, NH, G, hd);
      std::copy(from, from + hd, row + c);
    }
  }
}

void CpuBackend::kv_repeat_backward(float* dqkv, const float* dout, int N, int NH, int G, int hd) {
  const int64_t W = int64_t{NH + 2 * G} * hd, M = 3 * int64_t{NH} * hd;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* dy = dout + n * M;
    float* dx = dqkv + n * W;
    for (int64_t c = 0; c < W; ++c) dx[c] = ops::kv_repeat_gradient(dy, c, NH, G, hd);
  }
}

}  // namespace sb::cpu
