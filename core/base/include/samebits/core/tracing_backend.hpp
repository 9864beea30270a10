// The tracing wrapper (docs/TRACE.md): a ForwardingBackend that, while a trace::Recorder is
// attached (trace(), for the traced steps), records one trace::Row per op with the XXH3-64 of
// every region the op reads (before it runs) and writes (after). The same code traces the CPU and
// CUDA backends, vendor and canonical paths and every rank; detached it only forwards.
#pragma once
#include "samebits/core/forwarding_backend.hpp"
#include "samebits/core/trace.hpp"

namespace sb {

class TracingBackend final : public ForwardingBackend {
 public:
  explicit TracingBackend(Backend& inner) : ForwardingBackend(inner) {}
  // Records into `recorder` from now on (null: stops recording).
  void trace(trace::Recorder* recorder) { set_tracer(recorder); }

  void gemm(Trans ta, Trans tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
            int ldc, bool accumulate, Precision precision) override;
  void syrk(Trans ta, int n, int k, const float* a, int lda, float* c, int ldc, Precision precision) override;
  bool gemm_bias(float* out, const float* inp, const float* w, const float* bias, int N, int C, int OC) override;
  SB_BACKEND_OP_OVERRIDES
};

}  // namespace sb
