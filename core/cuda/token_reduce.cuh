// Reductions over the N tokens of a leaf, per column c < C (rule 3): out[c] = the fold of
// step(acc, n, c) over n. Canonical: one thread per column, one chain from +0 over n ascending —
// bitwise core/cpu's token_reduce for any block size. Native (reduce=native): chunks of tokens
// reduced in parallel and their partials added with float atomicAdd in arrival order, as vendor
// kernels do (the bits depend on timing).
#pragma once
#include <algorithm>

#include "cuda_backend_class.hpp"

namespace sb::cuda {

template <class Step>
__global__ void token_reduce_canonical_kernel(float* out /* (C) */, int N, int C, Step step) {
  const int stride = static_cast<int>(gridDim.x * blockDim.x);
  for (int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); c < C; c += stride) {
    float acc = 0.0f;
#pragma unroll 8
    for (int n = 0; n < N; ++n) acc = step(acc, n, c);
    out[c] = acc;
  }
}

template <class Step>
__global__ void token_reduce_native_kernel(float* out /* (C), zeroed */, int N, int C, int chunk, Step step) {
  const int n0 = static_cast<int>(blockIdx.y) * chunk;
  const int n1 = n0 + chunk < N ? n0 + chunk : N;
  const int stride = static_cast<int>(gridDim.x * blockDim.x);
  for (int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); c < C; c += stride) {
    float acc = 0.0f;
    for (int n = n0; n < n1; ++n) acc = step(acc, n, c);
    atomicAdd(out + c, acc);
  }
}

// Tokens per block of the native reduction (more when N needs over 65535 chunks).
constexpr int kNativeTokenChunk = 32;

template <class Step>
void token_reduce(CudaBackend& be, float* out /* (C) */, int N, int C, Step step) {
  if (C <= 0) return;
  const int threads = be.launch().block_threads;
  const unsigned grid = grid_for(C, threads);
  if (be.numerics().reduce == ReduceMode::canonical) {
    token_reduce_canonical_kernel<<<grid, threads, 0, be.stream()>>>(out, N, C, step);
    SB_CUDA_CHECK_LAUNCH();
    return;
  }
  SB_CUDA_CHECK(cudaMemsetAsync(out, 0, static_cast<size_t>(C) * sizeof(float), be.stream()));
  if (N <= 0) return;
  const int chunk = std::max(kNativeTokenChunk, (N + 65534) / 65535);
  const dim3 blocks(grid, static_cast<unsigned>((N + chunk - 1) / chunk));
  token_reduce_native_kernel<<<blocks, threads, 0, be.stream()>>>(out, N, C, chunk, step);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::cuda
