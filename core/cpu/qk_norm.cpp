// QK-norm on the CPU: OpenMP over tokens for the heads' rows, each head normed as an RMSNorm row
// (row statistics in the reduce mode's form, ops/rmsnorm.hpp); the gains' gradients are the chains
// of ops/qk_norm.hpp (one order under either reduce mode), beside the rows in one fork/join. Bitwise
// equal to core/cuda/qk_norm.cu.
#include <algorithm>
#include <vector>

#include "cpu_backend_class.hpp"
#include "samebits/core/ops/qk_norm.hpp"
#include "samebits/core/ops/rmsnorm.hpp"

namespace sb::cpu {

void CpuBackend::qk_norm_forward(float* out, float* rstd, const float* qkv, const float* wq, const float* wk, int N,
                                 int NH, int G, int hd) {
  const ReduceMode mode = numerics().reduce;
  const int heads = NH + G;
  const int64_t W = int64_t{NH + 2 * G} * hd;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    for (int h = 0; h < heads; ++h) {
      const int64_t at = n * W + ops::qk_norm_column(h, hd);
      const float* x = qkv + at;
      const float* w = h < NH ? wq : wk;
      float* y = out + at;
      const float r = ops::norm_rstd(row_dot(x, x, hd, mode), hd);
#pragma omp simd
      for (int i = 0; i < hd; ++i) y[i] = ops::rmsnorm_out(ops::rmsnorm_xhat(x[i], r), w[i]);
      rstd[int64_t{n} * heads + h] = r;
    }
    const int64_t values = n * W + int64_t{heads} * hd;  // the value heads pass unchanged
    std::copy(qkv + values, qkv + (n + 1) * W, out + values);
  }
}

void CpuBackend::qk_norm_backward(float* dqkv, float* dwq, float* dwk, const float* dout, const float* qkv,
                                  const float* wq, const float* wk, const float* rstd, int N, int NH, int G, int hd,
                                  bool accumulate) {
  const ReduceMode mode = numerics().reduce;
  const int heads = NH + G;
  const int64_t W = int64_t{NH + 2 * G} * hd;
  // The chains' starting values: +0, or the previous rank's (read before the chains overwrite them).
  std::vector<float> q0(static_cast<size_t>(hd), 0.0f), k0(static_cast<size_t>(hd), 0.0f);
  if (accumulate) std::copy(dwq, dwq + hd, q0.begin()), std::copy(dwk, dwk + hd, k0.begin());
  const auto gain_step = [&](const std::vector<float>& start, int64_t r, ops::QkNormStep s, float acc, int c) {
    const int64_t i = s.n * W + ops::qk_norm_column(s.head, hd) + c;
    const float xhat = ops::rmsnorm_xhat(qkv[i], rstd[s.n * heads + s.head]);
    return ops::norm_gain_grad_step(r == 0 ? acc + start[size_t(c)] : acc, dout[i], xhat);
  };
  const auto q_step = [&](float acc, int64_t r, int c) {
    return gain_step(q0, r, ops::qk_norm_query_step(r, N, NH, G), acc, c);
  };
  const auto k_step = [&](float acc, int64_t r, int c) {
    return gain_step(k0, r, ops::qk_norm_key_step(r, N, NH), acc, c);
  };
#pragma omp parallel
  {
    token_reduce_canonical_nowait(dwq, NH * N, hd, q_step);
    token_reduce_canonical_nowait(dwk, G * N, hd, k_step);
    std::vector<float> dnorm(static_cast<size_t>(hd)), xhat(static_cast<size_t>(hd));  // (hd) each
#pragma omp for schedule(static)
    for (int n = 0; n < N; ++n) {
      for (int h = 0; h < heads; ++h) {
        const int64_t at = n * W + ops::qk_norm_column(h, hd);
        const float *x = qkv + at, *dy = dout + at, *w = h < NH ? wq : wk;
        const float r = rstd[int64_t{n} * heads + h];
#pragma omp simd
        for (int i = 0; i < hd; ++i) {
          dnorm[size_t(i)] = dy[i] * w[i];
          xhat[size_t(i)] = ops::rmsnorm_xhat(x[i], r);
        }
        const float m = ops::norm_mean(row_dot(dnorm.data(), xhat.data(), hd, mode), hd);
        float* dx = dqkv + at;
#pragma omp simd
        for (int i = 0; i < hd; ++i) dx[i] = ops::rmsnorm_dinp(dnorm[size_t(i)], xhat[size_t(i)], m, r);
      }
      const int64_t values = n * W + int64_t{heads} * hd;
      std::copy(dout + values, dout + (n + 1) * W, dqkv + values);
    }
  }
}

}  // namespace sb::cpu
