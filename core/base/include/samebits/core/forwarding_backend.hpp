// A Backend that runs every call on another backend (`inner`, which must outlive it): the base of
// TracingBackend (tracing_backend.hpp) and of the tests' planted backends, which override the few
// ops they change. Memory, accumulators, optimizer kernels and sums are the inner backend's.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "samebits/core/backend.hpp"

namespace sb {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(Backend& inner) : Backend(inner.numerics()), inner_(inner) {}

  Backend& inner() { return inner_; }
  Device device() const override { return inner_.device(); }
  std::string describe() const override { return inner_.describe(); }

  Tensor alloc(DType dtype, Shape shape) override { return inner_.alloc(dtype, std::move(shape)); }
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override { inner_.copy(dst, src, bytes); }
  void zero(void* dst, size_t bytes) override { inner_.zero(dst, bytes); }
  void synchronize() override { inner_.synchronize(); }
  std::unique_ptr<GradAccumulator> make_accumulator(size_t n) override { return inner_.make_accumulator(n); }
  std::unique_ptr<GradAccumulator> make_native_accumulator(size_t n) override {
    return inner_.make_native_accumulator(n);
  }
  OptimKernels& optim_kernels() override { return inner_.optim_kernels(); }
  std::unique_ptr<TensorSums> make_tensor_sums(std::vector<TensorSpan> spans) override {
    return inner_.make_tensor_sums(std::move(spans));
  }
  void fingerprints(const float* flat, const std::vector<TensorSpan>& spans, uint64_t* out) override {
    inner_.fingerprints(flat, spans, out);
  }

  void gemm(const ops::GemmProblem& g) override { inner_.gemm(g); }
  void syrk(const ops::GemmProblem& g) override { inner_.syrk(g); }
#include "samebits/core/backend_op_overrides.hpp"

 private:
  Backend& inner_;
};

}  // namespace sb
