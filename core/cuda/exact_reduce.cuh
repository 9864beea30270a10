// Exact reductions on the device (internal to core/cuda): S exact sums over i < n, each thread one
// det::ExactSum per sum over its grid-stride elements, merged as integer words (add_exact_words:
// shared memory, then global integer atomics). Integer addition is associative, so no grid, block
// size or atomic order changes a word; the words add into what `out` holds (several launches
// accumulate, up to the words' bound of 2^30 thread parts).
#pragma once
#include <algorithm>
#include <cstdint>

#include "cuda_backend_class.hpp"
#include "samebits/core/exact_norm.hpp"

namespace sb::cuda {

constexpr int kExactWords = det::ExactSum::kWords;

struct AtomicWordAdd {
  __device__ void operator()(unsigned long long* word, unsigned long long v) const { atomicAdd(word, v); }
};

// term(i, sums) adds element i's terms into sums[0..S).  out: (S, kExactWords), added into.
template <int S, class Term>
__global__ void exact_reduce_kernel(int64_t n, Term term, unsigned long long* out) {
  __shared__ unsigned long long block[S * kExactWords];
  for (int j = threadIdx.x; j < S * kExactWords; j += blockDim.x) block[j] = 0;
  __syncthreads();
  det::ExactSum sums[S];
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) term(i, sums);
  for (int s = 0; s < S; ++s) add_exact_words(block + s * kExactWords, sums[s], AtomicWordAdd{});
  __syncthreads();
  for (int j = threadIdx.x; j < S * kExactWords; j += blockDim.x) {
    if (block[j] != 0) atomicAdd(&out[j], block[j]);
  }
}

// Launches exact_reduce_kernel on the backend's stream: two blocks per SM at most, so each thread
// sums many elements before its words merge.  out: device (S, kExactWords).
template <int S, class Term>
void exact_reduce(CudaBackend& be, int64_t n, const Term& term, unsigned long long* out) {
  if (n <= 0) return;
  const int threads = be.launch().block_threads;
  const unsigned blocks = std::min<unsigned>(grid_for(n, threads), 2u * static_cast<unsigned>(be.sm_count()));
  exact_reduce_kernel<S><<<blocks, threads, 0, be.stream()>>>(n, term, out);
  SB_CUDA_CHECK_LAUNCH();
}

// Σ x² (each square exact in fp64).
struct SumSquares {
  const float* x;  // (n)
  __device__ void operator()(int64_t i, det::ExactSum* s) const { s[0].add(exact_square(x[i])); }
};

}  // namespace sb::cuda
