// Vendor-mode initialisation with cuRAND's device API (docs/CUDA.md "Vendor paths"): one thread
// per element, a Philox4x32-10 state at (seed, subsequence = stream, offset = 2i) and
// curand_normal. Not part of any deterministic path: GPT::init stays samebits' Philox.
#include <curand_kernel.h>

#include "cuda_backend.hpp"
#include "elementwise.cuh"
#include "samebits/core/cuda/curand_init.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/philox.hpp"

namespace sb {
namespace cuda {
namespace {

struct CurandNormal {
  float* dst;  // (n)
  float stddev;
  uint64_t seed, stream;
  __device__ void operator()(int64_t i) const {
    curandStatePhilox4_32_10_t state;
    curand_init(seed, stream, 2 * static_cast<uint64_t>(i), &state);
    dst[i] = stddev * curand_normal(&state);
  }
};

struct Fill {
  float* dst;  // (n)
  float value;
  __device__ void operator()(int64_t i) const { dst[i] = value; }
};

CudaBackend& as_cuda(Backend& backend) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  SB_CHECK(cuda != nullptr, "cuRAND initialisation needs a CUDA backend, got ", backend.describe());
  return *cuda;
}

}  // namespace
}  // namespace cuda

void curand_normal_fill(Backend& backend, float* dst, size_t n, float stddev, uint64_t seed,
                        uint64_t stream) {
  cuda::CudaBackend& be = cuda::as_cuda(backend);
  be.activate();
  cuda::for_each(be, static_cast<int64_t>(n), cuda::CurandNormal{dst, stddev, seed, stream});
}

void curand_init_gpt(GPT& model, uint64_t seed) {
  cuda::CudaBackend& be = cuda::as_cuda(model.backend());
  be.activate();
  float* w = model.weights().data_as<float>();
  be.zero(w, model.weights().bytes());
  for (const ParamView& p : model.params()) {
    float* dst = w + p.offset;
    if (p.init_std == 0.0f) {
      cuda::for_each(be, static_cast<int64_t>(p.numel), cuda::Fill{dst, p.init_value});
    } else {
      curand_normal_fill(be, dst, p.numel, p.init_std, seed, det::stream_of(p.name));
    }
  }
}

}  // namespace sb
