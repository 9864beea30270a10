// RMSNorm on the CPU: OpenMP over rows (forward, dinp) and channel blocks (dw: chains over tokens
// ascending, rule 3). Row statistics via det::lane32 (rule 2), formulas from ops/rmsnorm.hpp:
// elementwise loops SIMD across channels; bitwise equal to ops::rmsnorm_row_* and to
// core/cuda/rmsnorm.cu.
#include <vector>

#include "cpu_backend_class.hpp"
#include "samebits/core/ops/matmul.hpp"
#include "samebits/core/ops/rmsnorm.hpp"

namespace sb::cpu {

void CpuBackend::rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, int N, int C) {
  const ReduceMode mode = numerics().reduce;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* x = inp + static_cast<size_t>(n) * C;
    float* y = out + static_cast<size_t>(n) * C;
    const float r = ops::norm_rstd(row_dot(x, x, C, mode), C);
#pragma omp simd
    for (int i = 0; i < C; ++i) y[i] = ops::rmsnorm_out(ops::rmsnorm_xhat(x[i], r), w[i]);
    rstd[n] = r;
  }
}

void CpuBackend::rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w,
                                  const float* rstd, int N, int C) {
  const ReduceMode mode = numerics().reduce;
#pragma omp parallel
  {
    std::vector<float> dnorm(C), xhat(C);  // (C) each
#pragma omp for schedule(static)
    for (int n = 0; n < N; ++n) {
      const float* x = inp + static_cast<size_t>(n) * C;
      const float* dy = dout + static_cast<size_t>(n) * C;
#pragma omp simd
      for (int i = 0; i < C; ++i) {
        dnorm[i] = dy[i] * w[i];
        xhat[i] = ops::rmsnorm_xhat(x[i], rstd[n]);
      }
      const float m = ops::norm_mean(row_dot(dnorm.data(), xhat.data(), C, mode), C);
      float* dx = dinp + static_cast<size_t>(n) * C;
#pragma omp simd
      for (int i = 0; i < C; ++i) dx[i] = ops::rmsnorm_dinp(dnorm[i], xhat[i], m, rstd[n]);
    }
  }
  token_reduce(dw, N, C, mode, [&](float acc, int n, int c) {
    const size_t i = static_cast<size_t>(n) * C + c;
    return ops::norm_gain_grad_step(acc, dout[i], ops::rmsnorm_xhat(inp[i], rstd[n]));
  });
}

}  // namespace sb::cpu
