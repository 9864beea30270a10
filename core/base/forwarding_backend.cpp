// ForwardingBackend (forwarding_backend.hpp): every op passed to the inner backend unchanged (the
// ops of backend_op_list.hpp, one definition each from the list).
#include "samebits/core/forwarding_backend.hpp"

namespace sb {

void ForwardingBackend::set_numerics(const Numerics& n) {
  Backend::set_numerics(n);
  inner_.set_numerics(n);
}

void ForwardingBackend::copy_from_host(void* dst, const void* host_src, size_t bytes) {
  count_from_host(bytes);
  inner_.copy_from_host(dst, host_src, bytes);
}

void ForwardingBackend::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  count_to_host(bytes);
  inner_.copy_to_host(host_dst, src, bytes);
}

void ForwardingBackend::gemm(Trans ta, Trans tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                             float* c, int ldc, bool accumulate, Precision precision) {
  inner_.gemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate, precision);
}
void ForwardingBackend::syrk(Trans ta, int n, int k, const float* a, int lda, float* c, int ldc, Precision precision) {
  inner_.syrk(ta, n, k, a, lda, c, ldc, precision);
}
bool ForwardingBackend::gemm_bias(float* out, const float* inp, const float* w, const float* bias, int N, int C,
                                  int OC) {
  return inner_.gemm_bias(out, inp, w, bias, N, C, OC);
}
#define SB_BACKEND_OP(name, params, args, ...) \
  void ForwardingBackend::name params { inner_.name args; }
#include "samebits/core/backend_op_list.hpp"

}  // namespace sb
