// RMSNorm on the GPU: one warp per row (forward, dinp), Σx² and Σ dnorm·xhat in the 32-lane form
// (lane l: elements l, l+32, ... ascending by fma, then det::lane32_fold's tree by shuffles, rule
// 2); dw a chain over tokens ascending per channel (rule 3). Formulas from ops/rmsnorm.hpp:
// bitwise core/cpu/rmsnorm.cpp for any launch configuration.
#include "cuda_backend_class.hpp"
#include "samebits/core/cuda/lane32_warp.cuh"
#include "samebits/core/ops/rmsnorm.hpp"
#include "token_reduce.cuh"

namespace sb::cuda {
namespace {

__global__ void rmsnorm_forward_kernel(float* out, float* rstd, const float* inp, const float* w, int N, int C) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t n = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (n >= N) return;            // the whole warp leaves together
  const float* x = inp + n * C;  // (C)
  float q = 0.0f;
  for (int i = lane; i < C; i += 32) q = det::fma_f32(x[i], x[i], q);
  const float r = ops::norm_rstd(warp_lane32_fold(q), C);
  float* y = out + n * C;  // (C)
  for (int i = lane; i < C; i += 32) y[i] = ops::rmsnorm_out(ops::rmsnorm_xhat(x[i], r), w[i]);
  if (lane == 0) rstd[n] = r;
}

__global__ void rmsnorm_dinp_kernel(float* dinp, const float* dout, const float* inp, const float* w, const float* rstd,
                                    int N, int C) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t n = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (n >= N) return;
  const float* x = inp + n * C;    // (C)
  const float* dy = dout + n * C;  // (C)
  const float r = rstd[n];
  float s = 0.0f;
  for (int i = lane; i < C; i += 32) s = det::fma_f32(dy[i] * w[i], ops::rmsnorm_xhat(x[i], r), s);
  const float m = ops::norm_mean(warp_lane32_fold(s), C);
  float* dx = dinp + n * C;  // (C)
  for (int i = lane; i < C; i += 32) dx[i] = ops::rmsnorm_dinp(dy[i] * w[i], ops::rmsnorm_xhat(x[i], r), m, r);
}

// dw[c] ← fma(dout[n][c], x[n][c]·rstd[n], dw[c]) for n ascending.
struct GainGradStep {
  const float *dout, *inp, *rstd;
  int C;
  __device__ float operator()(float acc, int n, int c) const {
    const size_t i = static_cast<size_t>(n) * C + c;
    return ops::norm_gain_grad_step(acc, dout[i], ops::rmsnorm_xhat(inp[i], rstd[n]));
  }
};

}  // namespace

void CudaBackend::rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, int N, int C) {
  if (N <= 0) return;
  activate();
  const int warps = launch().row_warps;
  rmsnorm_forward_kernel<<<grid_for_rows(N, warps), warps * 32, 0, stream()>>>(out, rstd, inp, w, N, C);
  SB_CUDA_CHECK_LAUNCH();
}

void CudaBackend::rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w,
                                   const float* rstd, int N, int C) {
  activate();
  if (N > 0) {
    const int warps = launch().row_warps;
    rmsnorm_dinp_kernel<<<grid_for_rows(N, warps), warps * 32, 0, stream()>>>(dinp, dout, inp, w, rstd, N, C);
    SB_CUDA_CHECK_LAUNCH();
  }
  token_reduce(*this, dw, N, C, GainGradStep{dout, inp, rstd, C});
}

}  // namespace sb::cuda
