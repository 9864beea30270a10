// GELU (tanh form) on the GPU: elementwise, one thread per element; the formula is ops/gelu.hpp
// (samebits tanh), bitwise core/cpu/gelu.cpp.
#include "cuda_backend_class.hpp"
#include "elementwise.cuh"
#include "samebits/core/ops/gelu.hpp"

namespace sb::cuda {
namespace {

struct GeluForward {
  float* out;        // (n)
  const float* inp;  // (n)
  __device__ void operator()(int64_t i) const { out[i] = ops::gelu_forward(inp[i]); }
};

struct GeluBackward {
  float* dinp;        // (n)
  const float* inp;   // (n)
  const float* dout;  // (n)
  __device__ void operator()(int64_t i) const { dinp[i] = ops::gelu_backward(inp[i], dout[i]); }
};

}  // namespace

void CudaBackend::gelu_forward(float* out, const float* inp, int64_t n) {
  activate();
  for_each(*this, n, GeluForward{out, inp});
}

void CudaBackend::gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n) {
  activate();
  for_each(*this, n, GeluBackward{dinp, inp, dout});
}

}  // namespace sb::cuda
