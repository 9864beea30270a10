// The bf16 pair order on the GPU (numerics.bf16_dot = pairs; ops/bf16_pairs.hpp): one thread per C
// element runs ops::bf16_pair_dot — the same chain as the CPU's kernels (core/cpu/bf16_pairs_*.cpp),
// bitwise. Products of other precisions run the canonical engine. A plain schedule: the contract,
// not the speed (no GPU computes vdpbf16ps' order natively).
#include "cuda_backend_class.hpp"
#include "elementwise.cuh"
#include "samebits/core/ops/bf16_pairs.hpp"

namespace sb::cuda {
namespace {

struct PairDot {
  ops::GemmProblem g;
  __device__ void operator()(int64_t e) const {
    const int i = static_cast<int>(e / g.n), j = static_cast<int>(e % g.n);
    const float* a = g.a_transposed() ? g.a + i : g.a + static_cast<size_t>(i) * g.lda;
    const ptrdiff_t sa = g.a_transposed() ? g.lda : 1;
    const float* b = g.b_transposed() ? g.b + static_cast<size_t>(j) * g.ldb : g.b + j;
    const ptrdiff_t sb = g.b_transposed() ? 1 : g.ldb;
    float* c = g.c + static_cast<size_t>(i) * g.ldc + j;
    *c = ops::bf16_pair_dot(a, sa, b, sb, g.k, g.accumulate ? *c : 0.0f);
  }
};

}  // namespace

void CudaBackend::gemm_pairs(const ops::GemmProblem& g) {
  if (g.precision != Precision::bf16) return gemm_canonical(g);
  for_each(*this, static_cast<int64_t>(g.m) * g.n, PairDot{g});
}

}  // namespace sb::cuda
