// A Mixture-of-Experts block's combine on the CPU: each token's expert outputs in its slots' order,
// one fma chain from +0, and the backward (the rows' gradients, the gates' canonical dots); the
// formulas are ops/moe_combine.hpp. OpenMP over tokens: a token's outputs are one thread's.
// Bitwise equal to core/cuda/moe_combine.cu.
#include "samebits/core/ops/moe_combine.hpp"
#include "cpu_backend_class.hpp"

namespace sb::cpu {

void CpuBackend::moe_combine(float* out, const float* y, const int32_t* rows, const float* gates, int N, int /*R*/,
                             int J, int C) {
#pragma omp parallel for schedule(static)
  for (int t = 0; t < N; ++t) {
    float* o = out + int64_t{t} * C;
    for (int c = 0; c < C; ++c) o[c] = 0.0f;
    for (int j = 0; j < J; ++j) {
      const int32_t row = rows[int64_t{t} * J + j];
      if (row < 0) continue;
      const float g = gates[int64_t{t} * J + j], *v = y + int64_t{row} * C;
#pragma omp simd
      for (int c = 0; c < C; ++c) o[c] = ops::moe_combine_step(o[c], g, v[c]);
    }
  }
}

void CpuBackend::moe_combine_backward(float* dy, float* dgates, const float* dout, const float* y, const int32_t* rows,
                                      const float* gates, int N, int /*R*/, int J, int C) {
#pragma omp parallel for schedule(static)
  for (int t = 0; t < N; ++t) {
    const float* d = dout + int64_t{t} * C;
    for (int j = 0; j < J; ++j) {
      const int64_t slot = int64_t{t} * J + j;
      const int32_t row = rows[slot];
      if (row < 0) {
        dgates[slot] = 0.0f;
        continue;
      }
      const float g = gates[slot];
      float* dr = dy + int64_t{row} * C;
#pragma omp simd
      for (int c = 0; c < C; ++c) dr[c] = ops::moe_row_gradient(g, d[c]);
      dgates[slot] = ops::moe_gate_gradient(d, y + int64_t{row} * C, C);
    }
  }
}

}  // namespace sb::cpu
