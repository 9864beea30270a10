// cuRAND's device API as a vendor-mode initialiser, for the CUDA backend's tests: GPT::init's
// layout and scales (stream = det::stream_of(name), std = init_std, constants as given, padding
// zero), drawn with curand_init(seed, subsequence = stream, offset = 2i) and curand_normal.
// cuRAND's normal transform is not samebits' (fast intrinsics, the other Box–Muller branch), so the
// values differ from GPT::init's; nothing in samebits initialises this way.
#pragma once
#include <cuda_runtime.h>
#include <curand_kernel.h>

#include <cstddef>
#include <cstdint>

#include "samebits/core/cuda/check.hpp"
#include "samebits/core/cuda/cuda_backend.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/det/philox.hpp"

namespace sbt {

// dst[i] = stddev · curand_normal(curand_init(seed, stream, 2i)).  dst: (n) device
__global__ void curand_normal_kernel(float* dst, int64_t n, float stddev, uint64_t seed, uint64_t stream) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  curandStatePhilox4_32_10_t state;
  curand_init(seed, stream, 2 * static_cast<uint64_t>(i), &state);
  dst[i] = stddev * curand_normal(&state);
}

// dst[i] = value.  dst: (n) device
__global__ void fill_kernel(float* dst, int64_t n, float value) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = value;
}

// Initialises `model` (on a CUDA backend) with cuRAND's normals.
inline void curand_init_gpt(sb::GPT& model, uint64_t seed) {
  sb::Backend& be = model.backend();
  SB_CUDA_CHECK(cudaSetDevice(sb::cuda_device(be)));
  const cudaStream_t stream = sb::cuda_stream(be);
  float* w = model.weights().data_as<float>();
  be.zero(w, model.weights().bytes());
  for (const sb::ParamView& p : model.params()) {
    const int64_t n = static_cast<int64_t>(p.numel);
    const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
    if (p.init_std == 0.0f) {
      fill_kernel<<<blocks, 256, 0, stream>>>(w + p.offset, n, p.init_value);
    } else {
      curand_normal_kernel<<<blocks, 256, 0, stream>>>(w + p.offset, n, p.init_std, seed, sb::det::stream_of(p.name));
    }
    SB_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace sbt
