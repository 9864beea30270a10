// LayerNorm on the GPU: one warp per row (forward, dinp), its statistics in the 32-lane form —
// lane l sums elements l, l+32, ... ascending, then det::lane32_fold's tree by shuffles (rule 2);
// dw and db are chains over tokens ascending, one thread per channel (rule 3). Formulas from
// ops/layernorm.hpp: bitwise core/cpu/layernorm.cpp for any launch configuration.
#include "cuda_backend_class.hpp"
#include "samebits/core/cuda/device_ops.hpp"
#include "samebits/core/cuda/lane32_warp.cuh"
#include "samebits/core/ops/layernorm.hpp"
#include "samebits/core/ops/matmul.hpp"
#include "token_reduce.cuh"

namespace sb::cuda {
namespace {

__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* inp, const float* w,
                                         const float* b, int N, int C, float eps) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t n = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (n >= N) return;            // the whole warp leaves together
  const float* x = inp + n * C;  // (C)
  float s = 0.0f;
  for (int i = lane; i < C; i += 32) s = s + x[i];
  const float m = ops::norm_mean(warp_lane32_fold(s), C);
  float q = 0.0f;
  for (int i = lane; i < C; i += 32) {
    const float d = x[i] - m;
    q = det::fma_f32(d, d, q);
  }
  const float r = ops::norm_rstd(warp_lane32_fold(q), C, eps);
  float* y = out + n * C;  // (C)
  for (int i = lane; i < C; i += 32) {
    const float xhat = ops::layernorm_xhat(x[i], m, r);
    y[i] = b ? ops::layernorm_out(xhat, w[i], b[i]) : ops::layernorm_out_nobias(xhat, w[i]);
  }
  if (lane == 0) {
    mean[n] = m;
    rstd[n] = r;
  }
}

__global__ void layernorm_dinp_kernel(float* dinp, const float* dout, const float* inp, const float* w,
                                      const float* mean, const float* rstd, int N, int C) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t n = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (n >= N) return;
  const float* x = inp + n * C;    // (C)
  const float* dy = dout + n * C;  // (C)
  const float mu = mean[n], r = rstd[n];
  float s1 = 0.0f, s2 = 0.0f;
  for (int i = lane; i < C; i += 32) {
    const float dnorm = dy[i] * w[i];
    s1 = s1 + dnorm;
    s2 = det::fma_f32(dnorm, ops::layernorm_xhat(x[i], mu, r), s2);
  }
  const float m1 = ops::norm_mean(warp_lane32_fold(s1), C);
  const float m2 = ops::norm_mean(warp_lane32_fold(s2), C);
  float* dx = dinp + n * C;  // (C)
  for (int i = lane; i < C; i += 32)
    dx[i] = ops::layernorm_dinp(dy[i] * w[i], ops::layernorm_xhat(x[i], mu, r), m1, m2, r);
}

// dw[c] ← fma(dout[n][c], xhat[n][c], dw[c]) for n ascending.
struct GainGradStep {
  const float *dout, *inp, *mean, *rstd;
  int C;
  __device__ float operator()(float acc, int n, int c) const {
    const size_t i = static_cast<size_t>(n) * C + c;
    return ops::norm_gain_grad_step(acc, dout[i], ops::layernorm_xhat(inp[i], mean[n], rstd[n]));
  }
};

// db[c] ← db[c] + dout[n][c] for n ascending.
struct BiasGradStep {
  const float* dout;
  int C;
  __device__ float operator()(float acc, int n, int c) const {
    return ops::token_sum_step(acc, dout[static_cast<size_t>(n) * C + c]);
  }
};

}  // namespace

void CudaBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                                    const float* b, int N, int C) {
  layernorm_rows(*this, out, mean, rstd, inp, w, b, N, C, ops::kNormEps);
}

void layernorm_rows(Backend& backend, float* out, float* mean, float* rstd, const float* inp, const float* w,
                    const float* b, int N, int C, float eps) {
  if (N <= 0) return;
  CudaBackend& be = CudaBackend::of(backend);
  be.activate();
  const int warps = be.launch().row_warps;
  layernorm_forward_kernel<<<grid_for_rows(N, warps), warps * 32, 0, be.stream()>>>(out, mean, rstd, inp, w, b, N, C,
                                                                                    eps);
  SB_CUDA_CHECK_LAUNCH();
}

void CudaBackend::layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                                     const float* w, const float* mean, const float* rstd, int N, int C) {
  activate();
  if (N > 0) {
    const int warps = launch().row_warps;
    layernorm_dinp_kernel<<<grid_for_rows(N, warps), warps * 32, 0, stream()>>>(dinp, dout, inp, w, mean, rstd, N, C);
    SB_CUDA_CHECK_LAUNCH();
  }
  token_reduce(*this, dw, N, C, GainGradStep{dout, inp, mean, rstd, C});
  if (db) token_reduce(*this, db, N, C, BiasGradStep{dout, C});
}

}  // namespace sb::cuda
