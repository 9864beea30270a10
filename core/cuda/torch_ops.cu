// samebits.torch.deterministic's row and elementwise kernels on the GPU (device_ops.hpp): softmax
// rows one warp per row (the exact max by shuffles, the 32-lane denominator by
// warp_lane32_fold: lane l sums elements l, l+32, … ascending, as det::lane32 does), reductions of a
// row likewise or token_reduce's chains over k ascending for a strided dimension, elementwise functions
// by grid-stride loops — ops/softmax.hpp's and ops/pointwise.hpp's formulas, bitwise the host loops
// of core/cpu/{softmax_rows,reduce_middle,pointwise}.cpp for any launch configuration.
#include "cuda_backend_class.hpp"
#include "elementwise.cuh"
#include "samebits/core/cuda/device_ops.hpp"
#include "samebits/core/cuda/lane32_warp.cuh"
#include "samebits/core/ops/pointwise.hpp"
#include "samebits/core/ops/softmax.hpp"
#include "token_reduce.cuh"

namespace sb::cuda {
namespace {

__global__ void softmax_rows_kernel(float* out, const float* inp, int64_t rows, int64_t cols, bool log) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t r = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (r >= rows) return;  // the whole warp leaves together
  const float* x = inp + r * cols;
  float* y = out + r * cols;
  float m = det::float_of_bits(0xff800000u);
  for (int64_t i = lane; i < cols; i += 32) m = ops::exact_max(m, x[i]);
  m = warp_exact_max(m);
  float s = 0.0f;
  for (int64_t i = lane; i < cols; i += 32) s = s + ops::softmax_numerator(x[i], m);
  const float den = warp_lane32_fold(s);
  for (int64_t i = lane; i < cols; i += 32)
    y[i] = log ? ops::log_softmax_out(x[i], m, den) : ops::softmax_prob(ops::softmax_numerator(x[i], m), den);
}

__global__ void softmax_rows_backward_kernel(float* dinp, const float* dout, const float* out, int64_t rows,
                                             int64_t cols, bool log) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t r = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (r >= rows) return;
  const float* dy = dout + r * cols;
  const float* y = out + r * cols;
  float* dx = dinp + r * cols;
  float s = 0.0f;
  for (int64_t i = lane; i < cols; i += 32) s = log ? s + dy[i] : det::fma_f32(dy[i], y[i], s);
  s = warp_lane32_fold(s);
  for (int64_t i = lane; i < cols; i += 32)
    dx[i] = log ? ops::log_softmax_dinp(y[i], dy[i], s) : ops::softmax_dinp(y[i], dy[i], s);
}

// Column c = (o, i) of a strided reduction, one more k: token_reduce's step (the chain from the
// reduction's start value, k ascending).
struct StridedStep {
  ops::Reduction r;
  const float* inp;  // (outer, K, inner)
  int64_t K, inner;
  __device__ float operator()(float acc, int k, int c) const {
    const int64_t o = c / inner, i = c % inner;
    return ops::reduction_step(r, k == 0 ? ops::reduction_start(r) : acc, inp[(o * K + k) * inner + i]);
  }
};

template <ops::Pointwise F>
struct Value {
  float* out;
  const float* inp;
  __device__ void operator()(int64_t i) const { out[i] = ops::pointwise_value<F>(inp[i]); }
};

template <ops::Pointwise F>
struct Grad {
  float* dinp;
  const float *dout, *at;
  __device__ void operator()(int64_t i) const { dinp[i] = ops::pointwise_grad<F>(dout[i], at[i]); }
};

// One warp per row of K values: the sums in the 32-lane form, the max in any order.
__global__ void reduce_rows_kernel(ops::Reduction red, float* out, const float* inp, int64_t rows, int64_t K) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t r = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (r >= rows) return;
  const float* x = inp + r * K;
  float s = ops::reduction_start(red);
  for (int64_t i = lane; i < K; i += 32) s = ops::reduction_step(red, s, x[i]);
  s = ops::reduction_in_lanes(red) ? warp_lane32_fold(s) : warp_exact_max(s);
  if (lane == 0) out[r] = s;
}

}  // namespace

void softmax_rows(Backend& backend, float* out, const float* inp, int64_t rows, int64_t cols, bool log) {
  if (rows <= 0 || cols <= 0) return;
  CudaBackend& be = CudaBackend::of(backend);
  be.activate();
  const int warps = be.launch().row_warps;
  softmax_rows_kernel<<<grid_for_rows(rows, warps), warps * 32, 0, be.stream()>>>(out, inp, rows, cols, log);
  SB_CUDA_CHECK_LAUNCH();
}

void softmax_rows_backward(Backend& backend, float* dinp, const float* dout, const float* out, int64_t rows,
                           int64_t cols, bool log) {
  if (rows <= 0 || cols <= 0) return;
  CudaBackend& be = CudaBackend::of(backend);
  be.activate();
  const int warps = be.launch().row_warps;
  softmax_rows_backward_kernel<<<grid_for_rows(rows, warps), warps * 32, 0, be.stream()>>>(dinp, dout, out, rows, cols,
                                                                                           log);
  SB_CUDA_CHECK_LAUNCH();
}

void reduce_middle(Backend& backend, ops::Reduction r, float* out, const float* inp, int64_t outer, int64_t K,
                   int64_t inner) {
  CudaBackend& be = CudaBackend::of(backend);
  be.activate();
  if (inner == 1) {
    if (outer <= 0) return;
    const int warps = be.launch().row_warps;
    reduce_rows_kernel<<<grid_for_rows(outer, warps), warps * 32, 0, be.stream()>>>(r, out, inp, outer, K);
    SB_CUDA_CHECK_LAUNCH();
    return;
  }
  SB_CHECK(K <= INT32_MAX && outer * inner <= INT32_MAX, "reduce_middle: ", K, " x ", outer * inner,
           " beyond int indices");
  token_reduce(be, out, static_cast<int>(K), static_cast<int>(outer * inner), StridedStep{r, inp, K, inner});
}

void pointwise(Backend& backend, ops::Pointwise f, float* out, const float* inp, int64_t n) {
  CudaBackend& be = CudaBackend::of(backend);
  be.activate();
  ops::with_pointwise(f, [&](auto fn) { for_each(be, n, Value<decltype(fn)::value>{out, inp}); });
}

void pointwise_backward(Backend& backend, ops::Pointwise f, float* dinp, const float* dout, const float* at,
                        int64_t n) {
  CudaBackend& be = CudaBackend::of(backend);
  be.activate();
  ops::with_pointwise_grad(f, [&](auto fn) { for_each(be, n, Grad<decltype(fn)::value>{dinp, dout, at}); });
}

}  // namespace sb::cuda
