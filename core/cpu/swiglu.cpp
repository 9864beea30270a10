// SwiGLU on the CPU: elementwise over rows, OpenMP threads over rows and SIMD lanes over a row's F
// products; the formula is ops/swiglu.hpp (samebits exp), bitwise equal to core/cuda/swiglu.cu.
#include "samebits/core/ops/swiglu.hpp"
#include "cpu_backend_class.hpp"

namespace sb::cpu {
namespace {

[[gnu::flatten]] void swiglu_forward_row(float* out, const float* gate, const float* up, int64_t F) {  // (F) each
#pragma omp simd
  for (int64_t j = 0; j < F; ++j) out[j] = ops::swiglu_forward(gate[j], up[j]);
}

[[gnu::flatten]] void swiglu_backward_row(float* dgate, float* dup, const float* gate, const float* up,
                                          const float* dout, int64_t F) {  // (F) each
#pragma omp simd
  for (int64_t j = 0; j < F; ++j) {
    dgate[j] = ops::swiglu_backward_gate(gate[j], up[j], dout[j]);
    dup[j] = ops::swiglu_backward_up(gate[j], dout[j]);
  }
}

}  // namespace

void CpuBackend::swiglu_forward(float* out, const float* inp, int64_t N, int64_t F) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const float* row = inp + n * 2 * F;
    swiglu_forward_row(out + n * F, row, row + F, F);
  }
}

void CpuBackend::swiglu_backward(float* dinp, const float* inp, const float* dout, int64_t N, int64_t F) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const float* row = inp + n * 2 * F;
    float* drow = dinp + n * 2 * F;
    swiglu_backward_row(drow, drow + F, row, row + F, dout + n * F, F);
  }
}

}  // namespace sb::cpu
