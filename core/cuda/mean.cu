// The batch's means on the GPU (ops/gradient.hpp, ops/loss_mean.hpp), bitwise equal to
// core/cpu/mean.cpp: the gradient's division one thread per element; the native loss mean on one
// thread in token order (N floats of one leaf: a single pass is cheap).
#include "cuda_backend_class.hpp"
#include "elementwise.cuh"
#include "samebits/core/ops/gradient.hpp"
#include "samebits/core/ops/loss_mean.hpp"

namespace sb::cuda {
namespace {

struct GradientMean {
  float* x;  // (n)
  float divisor;
  __device__ void operator()(int64_t i) const { x[i] = ops::leaf_mean(x[i], divisor); }
};

struct NativeLossMean {
  float* mean;          // (1)
  const float* losses;  // (N)
  int N;
  __device__ void operator()(int64_t) const { mean[0] = ops::native_loss_mean(losses, N); }
};

}  // namespace

void CudaBackend::gradient_mean(float* x, int64_t n, float divisor) {
  activate();
  for_each(*this, n, GradientMean{x, divisor});
}

void CudaBackend::native_loss_mean(float* mean, const float* losses, int N) {
  activate();
  for_each(*this, 1, NativeLossMean{mean, losses, N});
}

}  // namespace sb::cuda
