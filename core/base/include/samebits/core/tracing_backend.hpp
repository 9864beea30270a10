// The tracing wrapper (docs/TRACE.md): a ForwardingBackend that, while a trace::Recorder is
// attached (trace(), for the traced steps), records one trace::Row per op with the XXH3-64 of
// every region the op reads (before it runs) and writes (after). The same code traces the CPU and
// CUDA backends, vendor and canonical paths and every rank; detached it only forwards. The
// optimizers' kernels (optim_kernels()) are the inner backend's, wrapped the same way.
#pragma once
#include <memory>

#include "samebits/core/forwarding_backend.hpp"
#include "samebits/core/optim_kernels.hpp"
#include "samebits/core/trace.hpp"

namespace sb {

class TracingBackend;

// The inner backend's OptimKernels, one row per call while its TracingBackend traces
// (tracing_optim_kernels.cpp): Muon's and Newton–Schulz's loops, AdamW, the exact sums, the clip.
class TracingOptimKernels final : public OptimKernels {
 public:
  explicit TracingOptimKernels(TracingBackend& owner);
  void muon_momentum(float* m, float* u, const float* g, size_t n, const ops::MuonMomentum& k) override;
  void muon_normalize(float* x, const float* u, size_t n, float denom) override;
  void ns_polynomial(float* b, const float* a, size_t n, float pb, float pc) override;
  void ns_combine(float* x, const float* bx, size_t n, float pa) override;
  det::ExactSum ortho_squares(const float* a, int r) override;
  void muon_apply(float* w, const float* x, size_t n, float decay, float step, UpdateSums* sums) override;
  void muon_apply_rows(float* w, const float* x, int rows, int cols, float decay, float step, const float* row_step,
                       bool cautious, UpdateSums* sums) override;
  void adamw(float* w, const float* g, float* m, float* v, size_t n, const ops::AdamWConstants& k,
             UpdateSums* sums) override;
  det::ExactSum sum_of_squares(const float* x, size_t n) override;
  void scale(float* x, size_t n, float factor) override;

 private:
  TracingBackend& owner_;
  OptimKernels& inner_;
};

class TracingBackend final : public ForwardingBackend {
 public:
  explicit TracingBackend(Backend& inner)
      : ForwardingBackend(inner), kernels_(std::make_unique<TracingOptimKernels>(*this)) {}
  // Records into `recorder` from now on (null: stops recording).
  void trace(trace::Recorder* recorder) { set_tracer(recorder); }
  OptimKernels& optim_kernels() override { return *kernels_; }

  void gemm(const ops::GemmProblem& g) override;
  void syrk(const ops::GemmProblem& g) override;
#include "samebits/core/backend_op_overrides.hpp"

 private:
  std::unique_ptr<TracingOptimKernels> kernels_;
};

}  // namespace sb
