// LayerNorm on the CPU: OpenMP over rows (forward, dinp) and over channel blocks (dw, db: chains
// over tokens ascending, rule 3; canonical: in dinp's fork/join). Row statistics via det::lane32 (rule 2), formulas
// from ops/layernorm.hpp, elementwise loops SIMD across channels: bitwise equal to ops::layernorm_row_* and to
// core/cuda/layernorm.cu.
#include <vector>

#include "cpu_backend_class.hpp"
#include "samebits/core/cpu/host_ops.hpp"
#include "samebits/core/ops/layernorm.hpp"
#include "samebits/core/ops/matmul.hpp"

namespace sb::cpu {

void layernorm_rows(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b, int N,
                    int C, ReduceMode mode, float eps) {
#pragma omp parallel
  {
    std::vector<float> d(C);  // (C): x − mean
#pragma omp for schedule(static)
    for (int n = 0; n < N; ++n) {
      const float* x = inp + static_cast<size_t>(n) * C;
      float* y = out + static_cast<size_t>(n) * C;
      const float m = ops::norm_mean(row_sum(x, C, mode), C);
#pragma omp simd
      for (int i = 0; i < C; ++i) d[i] = x[i] - m;
      const float r = ops::norm_rstd(row_dot(d.data(), d.data(), C, mode), C, eps);
#pragma omp simd
      for (int i = 0; i < C; ++i) {
        const float xhat = ops::layernorm_xhat(x[i], m, r);
        y[i] = b ? ops::layernorm_out(xhat, w[i], b[i]) : ops::layernorm_out_nobias(xhat, w[i]);
      }
      mean[n] = m;
      rstd[n] = r;
    }
  }
}

void CpuBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                                   const float* b, int N, int C) {
  layernorm_rows(out, mean, rstd, inp, w, b, N, C, numerics().reduce, ops::kNormEps);
}

void CpuBackend::layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                                    const float* w, const float* mean, const float* rstd, int N, int C) {
  const ReduceMode mode = numerics().reduce;
  const auto dw_step = [&](float acc, int n, int c) {
    const size_t i = static_cast<size_t>(n) * C + c;
    return ops::norm_gain_grad_step(acc, dout[i], ops::layernorm_xhat(inp[i], mean[n], rstd[n]));
  };
  const auto db_step = [&](float acc, int n, int c) {
    return ops::token_sum_step(acc, dout[static_cast<size_t>(n) * C + c]);
  };
  // Canonical: dinp's rows and the dw, db column chains (independent of dinp) in one fork/join.
  const bool fused = mode == ReduceMode::canonical;
#pragma omp parallel
  {
    std::vector<float> dnorm(C), xhat(C);  // (C) each
#pragma omp for schedule(static) nowait
    for (int n = 0; n < N; ++n) {
      const float* x = inp + static_cast<size_t>(n) * C;
      const float* dy = dout + static_cast<size_t>(n) * C;
#pragma omp simd
      for (int i = 0; i < C; ++i) {
        dnorm[i] = dy[i] * w[i];
        xhat[i] = ops::layernorm_xhat(x[i], mean[n], rstd[n]);
      }
      const float m1 = ops::norm_mean(row_sum(dnorm.data(), C, mode), C);
      const float m2 = ops::norm_mean(row_dot(dnorm.data(), xhat.data(), C, mode), C);
      float* dx = dinp + static_cast<size_t>(n) * C;
#pragma omp simd
      for (int i = 0; i < C; ++i) dx[i] = ops::layernorm_dinp(dnorm[i], xhat[i], m1, m2, rstd[n]);
    }
    if (fused) {
      token_reduce_canonical_nowait(dw, N, C, dw_step);
      if (db) token_reduce_canonical_nowait(db, N, C, db_step);
    }
  }
  if (fused) return;
  token_reduce(dw, N, C, mode, dw_step);
  if (db) token_reduce(db, N, C, mode, db_step);
}

}  // namespace sb::cpu
