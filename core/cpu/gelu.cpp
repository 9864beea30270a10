// GELU (tanh form) on the CPU: elementwise, OpenMP threads over chunks and SIMD lanes over
// elements; the formula is ops/gelu.hpp, bitwise equal to core/cuda/gelu.cu. The chunk loops are
// flattened so that samebits tanh inlines and vectorises: each lane runs the same IEEE operations
// as the scalar formula, and tanh's two branches are both computed and one selected per lane.
#include <algorithm>

#include "cpu_backend_class.hpp"
#include "samebits/core/ops/gelu.hpp"

namespace sb::cpu {
namespace {

constexpr int64_t kChunk = 4096;  // elements per OpenMP task

[[gnu::flatten]] void gelu_forward_chunk(float* out, const float* inp, int64_t n) {  // (n) each
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = ops::gelu_forward(inp[i]);
}

[[gnu::flatten]] void gelu_backward_chunk(float* dinp, const float* inp, const float* dout,
                                          int64_t n) {  // (n) each
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dinp[i] = ops::gelu_backward(inp[i], dout[i]);
}

}  // namespace

void CpuBackend::gelu_forward(float* out, const float* inp, int64_t n) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c)
    gelu_forward_chunk(out + c * kChunk, inp + c * kChunk, std::min(kChunk, n - c * kChunk));
}

void CpuBackend::gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t i = c * kChunk;
    gelu_backward_chunk(dinp + i, inp + i, dout + i, std::min(kChunk, n - i));
  }
}

}  // namespace sb::cpu
