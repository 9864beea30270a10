// SwiGLU on the GPU: elementwise, one thread per product; the formula is ops/swiglu.hpp (samebits
// exp), bitwise core/cpu/swiglu.cpp.
#include "cuda_backend_class.hpp"
#include "elementwise.cuh"
#include "samebits/core/ops/swiglu.hpp"

namespace sb::cuda {
namespace {

struct SwigluForward {
  float* out;        // (N, F)
  const float* inp;  // (N, 2F)
  int64_t F;
  __device__ void operator()(int64_t i) const {
    const float* row = inp + (i / F) * 2 * F;
    const int64_t j = i % F;
    out[i] = ops::swiglu_forward(row[j], row[F + j]);
  }
};

struct SwigluBackward {
  float* dinp;        // (N, 2F)
  const float* inp;   // (N, 2F)
  const float* dout;  // (N, F)
  int64_t F;
  __device__ void operator()(int64_t i) const {
    const int64_t at = (i / F) * 2 * F + i % F;
    dinp[at] = ops::swiglu_backward_gate(inp[at], inp[at + F], dout[i]);
    dinp[at + F] = ops::swiglu_backward_up(inp[at], dout[i]);
  }
};

}  // namespace

void CudaBackend::swiglu_forward(float* out, const float* inp, int64_t N, int64_t F) {
  activate();
  for_each(*this, N * F, SwigluForward{out, inp, F});
}

void CudaBackend::swiglu_backward(float* dinp, const float* inp, const float* dout, int64_t N, int64_t F) {
  activate();
  for_each(*this, N * F, SwigluBackward{dinp, inp, dout, F});
}

}  // namespace sb::cuda
