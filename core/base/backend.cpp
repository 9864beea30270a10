// What Backend writes once for every backend: the GEMM calls of the linear layer (which operand
// is transposed, which leading dimensions), so the CPU and CUDA backends differ only in how they
// run each GEMM and the bias loops. Every reduction's order is the callee's (rule 1, rule 3).
#include "samebits/core/backend.hpp"

#include "samebits/det/error.hpp"

namespace sb {

void check_gemm(const ops::GemmProblem& g) {
  SB_CHECK(g.m >= 0 && g.n >= 0 && g.k >= 0, "gemm sizes must be non-negative, got m=", g.m, " n=", g.n, " k=", g.k);
  SB_CHECK(g.bias == nullptr || (g.ldc == g.n && !g.accumulate),
           "a gemm with a bias writes a fresh contiguous C: expected ldc == n and no accumulate, got ldc=", g.ldc,
           " n=", g.n, " accumulate=", g.accumulate);
}

void Backend::matmul_forward(float* out, const float* inp, const float* w, const float* bias, int N, int C, int OC) {
  gemm({Trans::no, Trans::yes, N, OC, C, inp, C, w, C, out, OC, false, numerics().precision, bias});
}

void Backend::matmul_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w,
                              int N, int C, int OC) {
  const Precision prec = numerics().precision;
  if (dinp) gemm({Trans::no, Trans::no, N, C, OC, dout, OC, w, C, dinp, C, false, prec});
  gemm({Trans::yes, Trans::no, OC, C, N, dout, OC, inp, C, dw, C, false, prec});
  if (dbias) bias_backward(dbias, dout, N, OC);
}

void GradAccumulator::add_spans(const float*, const std::vector<TensorSpan>&) {
  SB_FAIL(
      "this backend's gradient accumulator has no add of tensor spans: expert parallelism (parallel.ep > 1) runs on "
      "CPU ranks with numerics.leaf_sum=exact");
}

void TensorSums::add_squares_of(const float*, const std::vector<size_t>&) {
  SB_FAIL(
      "this backend's tensor sums have no add of chosen tensors: expert parallelism (parallel.ep > 1) runs on CPU "
      "ranks");
}

void GradAccumulator::add_leaves(const float* a, const float* b, TensorSums* squares) {
  add(a);
  if (b != nullptr) add(b);
  if (squares == nullptr) return;
  squares->add(a, false);
  if (b != nullptr) squares->add(b, false);
}

}  // namespace sb
