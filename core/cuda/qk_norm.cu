// QK-norm on the GPU: one warp per (token, head) row, the row statistics in the 32-lane form (as
// core/cuda/rmsnorm.cu); the gains' gradients one thread per column, each the chain of
// ops/qk_norm.hpp. Bitwise core/cpu/qk_norm.cpp (canonical reduce) for any launch configuration.
#include "cuda_backend_class.hpp"
#include "elementwise.cuh"
#include "samebits/core/cuda/lane32_warp.cuh"
#include "samebits/core/ops/qk_norm.hpp"
#include "samebits/core/ops/rmsnorm.hpp"

namespace sb::cuda {
namespace {

struct Rows {
  int N, NH, G, hd;
  __device__ int heads() const { return NH + G; }
  __device__ int64_t width() const { return int64_t{NH + 2 * G} * hd; }
  // The first element of (token, head) row `row` of N·(NH + G), or -1 past the end.
  __device__ int64_t at(int64_t row) const {
    if (row >= int64_t{N} * heads()) return -1;
    return (row / heads()) * width() + ops::qk_norm_column(row % heads(), hd);
  }
};

__global__ void qk_norm_forward_kernel(float* out, float* rstd, const float* qkv, const float* wq, const float* wk,
                                       Rows s) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int64_t at = s.at(row);
  if (at < 0) return;  // the whole warp leaves together
  const float* x = qkv + at;
  const float* w = row % s.heads() < s.NH ? wq : wk;
  float q = 0.0f;
  for (int i = lane; i < s.hd; i += 32) q = det::fma_f32(x[i], x[i], q);
  const float r = ops::norm_rstd(warp_lane32_fold(q), s.hd);
  for (int i = lane; i < s.hd; i += 32) out[at + i] = ops::rmsnorm_out(ops::rmsnorm_xhat(x[i], r), w[i]);
  if (lane == 0) rstd[row] = r;
}

__global__ void qk_norm_dinp_kernel(float* dqkv, const float* dout, const float* qkv, const float* wq, const float* wk,
                                    const float* rstd, Rows s) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int64_t at = s.at(row);
  if (at < 0) return;
  const float *x = qkv + at, *dy = dout + at;
  const float* w = row % s.heads() < s.NH ? wq : wk;
  const float r = rstd[row];
  float d = 0.0f;
  for (int i = lane; i < s.hd; i += 32) d = det::fma_f32(dy[i] * w[i], ops::rmsnorm_xhat(x[i], r), d);
  const float m = ops::norm_mean(warp_lane32_fold(d), s.hd);
  for (int i = lane; i < s.hd; i += 32)
    dqkv[at + i] = ops::rmsnorm_dinp(dy[i] * w[i], ops::rmsnorm_xhat(x[i], r), m, r);
}

// The value heads pass unchanged: element e of the N·G·hd values.
struct CopyValues {
  float* out;
  const float* in;
  Rows s;
  __device__ void operator()(int64_t e) const {
    const int64_t per_row = int64_t{s.G} * s.hd,
                  i = (e / per_row) * s.width() + int64_t{s.heads()} * s.hd + e % per_row;
    out[i] = in[i];
  }
};

// dwq's chain (column c < hd), then dwk's (column hd + c): from +0 or from their values.
__global__ void qk_norm_gain_kernel(float* dwq, float* dwk, const float* dout, const float* qkv, const float* rstd,
                                    Rows s, bool accumulate) {
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= 2 * s.hd) return;
  const bool query = t < s.hd;
  const int c = query ? t : t - s.hd;
  float* dw = query ? dwq : dwk;
  const int64_t steps = int64_t{query ? s.NH : s.G} * s.N;
  float acc = accumulate ? dw[c] : 0.0f;
  for (int64_t r = 0; r < steps; ++r) {
    const ops::QkNormStep st = query ? ops::qk_norm_query_step(r, s.N, s.NH, s.G) : ops::qk_norm_key_step(r, s.N, s.NH);
    const int64_t i = st.n * s.width() + ops::qk_norm_column(st.head, s.hd) + c;
    acc = ops::norm_gain_grad_step(acc, dout[i], ops::rmsnorm_xhat(qkv[i], rstd[st.n * s.heads() + st.head]));
  }
  dw[c] = acc;
}

}  // namespace

void CudaBackend::qk_norm_forward(float* out, float* rstd, const float* qkv, const float* wq, const float* wk, int N,
                                  int NH, int G, int hd) {
  if (N <= 0) return;
  activate();
  const Rows s{N, NH, G, hd};
  const int warps = launch().row_warps;
  qk_norm_forward_kernel<<<grid_for_rows(int64_t{N} * (NH + G), warps), warps * 32, 0, stream()>>>(out, rstd, qkv, wq,
                                                                                                   wk, s);
  SB_CUDA_CHECK_LAUNCH();
  for_each(*this, int64_t{N} * G * hd, CopyValues{out, qkv, s});
}

void CudaBackend::qk_norm_backward(float* dqkv, float* dwq, float* dwk, const float* dout, const float* qkv,
                                   const float* wq, const float* wk, const float* rstd, int N, int NH, int G, int hd,
                                   bool accumulate) {
  activate();
  const Rows s{N, NH, G, hd};
  const int threads = launch().block_threads;
  qk_norm_gain_kernel<<<grid_for(2 * hd, threads), threads, 0, stream()>>>(dwq, dwk, dout, qkv, rstd, s, accumulate);
  SB_CUDA_CHECK_LAUNCH();
  if (N <= 0) return;
  const int warps = launch().row_warps;
  qk_norm_dinp_kernel<<<grid_for_rows(int64_t{N} * (NH + G), warps), warps * 32, 0, stream()>>>(dqkv, dout, qkv, wq, wk,
                                                                                                rstd, s);
  SB_CUDA_CHECK_LAUNCH();
  for_each(*this, int64_t{N} * G * hd, CopyValues{dqkv, dout, s});
}

}  // namespace sb::cuda
