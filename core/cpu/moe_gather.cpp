// A Mixture-of-Experts block's token rows on the CPU: the gather of each expert's tokens and its
// backward, the tokens' gradients added in their slots' order (ops/moe_combine.hpp). OpenMP over
// rows (gather) and tokens (scatter): each output row is written by one thread from its own
// inputs. Bitwise equal to core/cuda/moe_gather.cu.
#include <algorithm>

#include "cpu_backend_class.hpp"
#include "samebits/core/ops/moe_combine.hpp"

namespace sb::cpu {

void CpuBackend::moe_gather(float* xe, const float* x, const int32_t* token, int /*N*/, int R, int C) {
#pragma omp parallel for schedule(static)
  for (int r = 0; r < R; ++r) {
    const float* from = x + int64_t{token[r]} * C;
    std::copy(from, from + C, xe + int64_t{r} * C);
  }
}

void CpuBackend::moe_scatter_add(float* dx, const float* dxe, const int32_t* rows, int N, int /*R*/, int J, int C) {
#pragma omp parallel for schedule(static)
  for (int t = 0; t < N; ++t) {
    float* d = dx + int64_t{t} * C;
    for (int j = 0; j < J; ++j) {
      const int32_t row = rows[int64_t{t} * J + j];
      if (row < 0) continue;
      const float* g = dxe + int64_t{row} * C;
#pragma omp simd
      for (int c = 0; c < C; ++c) d[c] = ops::moe_scatter_step(d[c], g[c]);
    }
  }
}

}  // namespace sb::cpu
