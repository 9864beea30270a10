// Residual addition on the GPU: elementwise, one thread per element (ops/residual.hpp), bitwise
// core/cpu/residual.cpp. out may alias a or b: each thread reads its element before writing it.
#include "cuda_backend_class.hpp"
#include "elementwise.cuh"
#include "samebits/core/ops/residual.hpp"

namespace sb::cuda {
namespace {

struct ResidualForward {
  float* out;      // (n)
  const float* a;  // (n)
  const float* b;  // (n)
  __device__ void operator()(int64_t i) const { out[i] = ops::residual_out(a[i], b[i]); }
};

}  // namespace

void CudaBackend::residual_forward(float* out, const float* a, const float* b, int64_t n) {
  activate();
  for_each(*this, n, ResidualForward{out, a, b});
}

}  // namespace sb::cuda
