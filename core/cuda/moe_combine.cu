// A Mixture-of-Experts block's combine on the GPU: one thread per token column (its slots' chain),
// and for the backward one thread per row element and one per gate (its canonical dot); the
// formulas are ops/moe_combine.hpp, bitwise core/cpu/moe_combine.cpp.
#include "cuda_backend_class.hpp"
#include "elementwise.cuh"
#include "samebits/core/ops/moe_combine.hpp"

namespace sb::cuda {
namespace {

struct Combine {
  float* out;
  const float* y;
  const int32_t* rows;
  const float* gates;
  int J, C;
  __device__ void operator()(int64_t e) const {
    const int64_t t = e / C, c = e % C;
    float acc = 0.0f;
    for (int j = 0; j < J; ++j) {
      const int32_t row = rows[t * J + j];
      if (row >= 0) acc = ops::moe_combine_step(acc, gates[t * J + j], y[int64_t{row} * C + c]);
    }
    out[e] = acc;
  }
};

// Element e of slot (t, j)'s row gradient, one thread per (slot, column).
struct RowGradient {
  float* dy;
  const float* dout;
  const int32_t* rows;
  const float* gates;
  int J, C;
  __device__ void operator()(int64_t e) const {
    const int64_t slot = e / C, c = e % C, row = rows[slot];
    if (row >= 0) dy[row * C + c] = ops::moe_row_gradient(gates[slot], dout[(slot / J) * C + c]);
  }
};

struct GateGradient {
  float* dgates;
  const float* dout;
  const float* y;
  const int32_t* rows;
  int J, C;
  __device__ void operator()(int64_t slot) const {
    const int32_t row = rows[slot];
    dgates[slot] = row < 0 ? 0.0f : ops::moe_gate_gradient(dout + (slot / J) * C, y + int64_t{row} * C, C);
  }
};

}  // namespace

void CudaBackend::moe_combine(float* out, const float* y, const int32_t* rows, const float* gates, int N, int /*R*/,
                              int J, int C) {
  activate();
  for_each(*this, int64_t{N} * C, Combine{out, y, rows, gates, J, C});
}

void CudaBackend::moe_combine_backward(float* dy, float* dgates, const float* dout, const float* y, const int32_t* rows,
                                       const float* gates, int N, int /*R*/, int J, int C) {
  activate();
  for_each(*this, int64_t{N} * J * C, RowGradient{dy, dout, rows, gates, J, C});
  for_each(*this, int64_t{N} * J, GateGradient{dgates, dout, y, rows, J, C});
}

}  // namespace sb::cuda
