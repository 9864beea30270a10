// Grid-stride loops over independent elements (internal to core/cuda): each element is computed
// by exactly one thread from its own inputs, so the block and grid sizes cannot change a bit.
#pragma once
#include <cstdint>

#include "cuda_backend_class.hpp"

namespace sb::cuda {

// f(i) for every i < n.
template <class F>
__global__ void for_each_kernel(int64_t n, F f) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) f(i);
}

template <class F>
void for_each(CudaBackend& be, int64_t n, F f) {
  if (n <= 0) return;
  const int threads = be.launch().block_threads;
  for_each_kernel<<<grid_for(n, threads), threads, 0, be.stream()>>>(n, f);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::cuda
