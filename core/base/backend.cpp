// What Backend writes once for every backend: the GEMM calls of the linear layer (which operand
// is transposed, which leading dimensions), so the CPU and CUDA backends differ only in how they
// run each GEMM and the bias loops. Every reduction's order is the callee's (rule 1, rule 3).
#include "samebits/core/backend.hpp"

#include "samebits/det/error.hpp"

namespace sb {

void Backend::matmul_forward(float* out, const float* inp, const float* w, const float* bias, int N, int C, int OC) {
  if (bias != nullptr && gemm_bias(out, inp, w, bias, N, C, OC)) return;
  gemm(Trans::no, Trans::yes, N, OC, C, inp, C, w, C, out, OC, false, numerics().precision);
  if (bias != nullptr) bias_forward(out, bias, N, OC);
}

void Backend::matmul_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w,
                              int N, int C, int OC) {
  const Precision prec = numerics().precision;
  if (dinp) gemm(Trans::no, Trans::no, N, C, OC, dout, OC, w, C, dinp, C, false, prec);
  gemm(Trans::yes, Trans::no, OC, C, N, dout, OC, inp, C, dw, C, false, prec);
  if (dbias) bias_backward(dbias, dout, N, OC);
}

void Backend::gemm_exact_split(Trans, Trans, int, int, int, const float*, int, const float*, int, float*, int,
                               const float*, int, ExactGroup&) {
  SB_CHECK(false, "numerics.gemm=exact with parallel.tp > 1 runs on run.backend=cpu (this backend, ", describe(),
           ", has no k-split exact GEMM); use numerics.gemm=canonical");
}

void GradAccumulator::add_leaves(const float* a, const float* b, TensorSums* squares) {
  add(a);
  if (b != nullptr) add(b);
  if (squares == nullptr) return;
  squares->add(a, false);
  if (b != nullptr) squares->add(b, false);
}

}  // namespace sb
