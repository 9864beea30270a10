// A Mixture-of-Experts block's token rows on the GPU: one thread per element (gather) and per
// token column (scatter, its slots in order); the formulas are ops/moe_combine.hpp, bitwise
// core/cpu/moe_gather.cpp.
#include "cuda_backend_class.hpp"
#include "elementwise.cuh"
#include "samebits/core/ops/moe_combine.hpp"

namespace sb::cuda {
namespace {

struct Gather {
  float* xe;
  const float* x;
  const int32_t* token;
  int C;
  __device__ void operator()(int64_t e) const { xe[e] = x[int64_t{token[e / C]} * C + e % C]; }
};

struct ScatterAdd {
  float* dx;
  const float* dxe;
  const int32_t* rows;
  int J, C;
  __device__ void operator()(int64_t e) const {
    const int64_t t = e / C, c = e % C;
    float acc = dx[e];
    for (int j = 0; j < J; ++j) {
      const int32_t row = rows[t * J + j];
      if (row >= 0) acc = ops::moe_scatter_step(acc, dxe[int64_t{row} * C + c]);
    }
    dx[e] = acc;
  }
};

}  // namespace

void CudaBackend::moe_gather(float* xe, const float* x, const int32_t* token, int /*N*/, int R, int C) {
  activate();
  for_each(*this, int64_t{R} * C, Gather{xe, x, token, C});
}

void CudaBackend::moe_scatter_add(float* dx, const float* dxe, const int32_t* rows, int N, int /*R*/, int J, int C) {
  activate();
  for_each(*this, int64_t{N} * C, ScatterAdd{dx, dxe, rows, J, C});
}

}  // namespace sb::cuda
