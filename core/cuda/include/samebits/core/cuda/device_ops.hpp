// The device forms of samebits/core/cpu/host_ops.hpp — samebits.torch.deterministic's table on CUDA
// tensors (docs/TORCH.md) — on the stream of `backend` (a backend of make_cuda_backend; another
// kind is an sb::Error): the formulas of ops/ and the orders of the host loops, so a CUDA tensor gets
// a CPU tensor's bits. Pointers are device memory of the backend's GPU.
#pragma once
#include <cstdint>

#include "samebits/core/backend.hpp"
#include "samebits/core/ops/pointwise.hpp"

namespace sb::cuda {

// LayerNorm rows as Backend::layernorm_forward (which is this with ops::kNormEps), eps given.
void layernorm_rows(Backend& backend, float* out, float* mean, float* rstd, const float* inp, const float* w,
                    const float* b, int N, int C, float eps);
// Softmax (log: log softmax) rows and their input gradients from the output (host_ops.hpp).
void softmax_rows(Backend& backend, float* out, const float* inp, int64_t rows, int64_t cols, bool log);
void softmax_rows_backward(Backend& backend, float* dinp, const float* dout, const float* out, int64_t rows,
                           int64_t cols, bool log);
// The reduction of the middle dimension of (outer, K, inner) (host_ops.hpp reduce_middle).
void reduce_middle(Backend& backend, ops::Reduction r, float* out, const float* inp, int64_t outer, int64_t K,
                   int64_t inner);
// out[i] = f(inp[i]); dinp[i] = f'·dout[i] (ops/pointwise.hpp; a function without a gradient
// formula is an sb::Error).
void pointwise(Backend& backend, ops::Pointwise f, float* out, const float* inp, int64_t n);
void pointwise_backward(Backend& backend, ops::Pointwise f, float* dinp, const float* dout, const float* at, int64_t n);

}  // namespace sb::cuda
