// numerics.leaf_sum=native (Backend::make_native_accumulator): a rank's leaf gradients summed as a
// framework accumulates them — the first leaf copied, each later one added in fp32 (the backend's
// residual_forward: ops/residual.hpp's addition), rounded after every leaf. The bits depend on the
// leaves' order and on how they are split over ranks; vendor mode exists to be measured against.
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/ops/gradient.hpp"
#include "samebits/core/optim_kernels.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/exact_sum.hpp"
#include "samebits/det/fixed_point.hpp"
#include "samebits/det/fixed_status.hpp"

namespace sb {
namespace {

class NativeGradAccumulator final : public GradAccumulator {
 public:
  NativeGradAccumulator(Backend& be, size_t n)
      : be_(be), sum_(be.alloc(DType::f32, {static_cast<int64_t>(n)})), n_(n) {}
  size_t size() const override { return n_; }
  void clear() override { adds_ = 0; }
  void add(const float* grad) override {
    float* sum = sum_.data_as<float>();
    if (adds_ == 0) {
      be_.copy(sum, grad, n_ * sizeof(float));
    } else {
      be_.residual_forward(sum, sum, grad, static_cast<int64_t>(n_));
    }
    ++adds_;
  }
  // A first pair in one pass: sum = a + b, the bits of copying a and adding b.
  void add_leaves(const float* a, const float* b, TensorSums* squares) override {
    if (b == nullptr || adds_ != 0) {
      GradAccumulator::add_leaves(a, b, squares);
      return;
    }
    be_.residual_forward(sum_.data_as<float>(), a, b, static_cast<int64_t>(n_));
    adds_ = 2;
    if (squares == nullptr) return;
    squares->add(a, false);
    squares->add(b, false);
  }
  void round(float* out, float divisor) override {
    const uint32_t bits = status();
    SB_CHECK(bits == 0, "the batch gradient's fp32 leaf sum held", det::fixed_status_names(bits), " values");
    if (adds_ == 0) {
      be_.zero(out, n_ * sizeof(float));
    } else {
      be_.copy(out, sum_.data_as<float>(), n_ * sizeof(float));
    }
    if (divisor == 1.0f) return;  // x / 1 is x
    std::vector<float> mean(n_);
    be_.copy_to_host(mean.data(), out, n_ * sizeof(float));
    for (float& x : mean) x = ops::leaf_mean(x, divisor);
    be_.copy_from_host(out, mean.data(), n_ * sizeof(float));
  }
  uint64_t adds() const override { return adds_; }
  // NaN or Inf in the sum (a leaf held one, or the fp32 sum overflowed), counted where the sum
  // lives by the exact Σx² (its squares are exact in fp64: a finite value never counts as Inf).
  uint32_t status() const override {
    if (adds_ == 0) return 0;
    const det::ExactSum s = be_.optim_kernels().sum_of_squares(sum_.data_as<float>(), n_);
    return (s.nans() != 0 ? det::kFixedNaN : 0u) | (s.infs() != 0 ? det::kFixedInf : 0u);
  }
  uint8_t* block_ranges() override { no_wire(); }
  size_t range_bytes() const override { no_wire(); }
  size_t wire_words(uint64_t) override { no_wire(); }
  uint64_t* encode(uint64_t, const std::vector<WireRun>&, uint64_t*) override { no_wire(); }
  void decode(uint64_t, uint32_t, const std::vector<WireRun>&, size_t) override { no_wire(); }
  size_t memory_bytes() const override { return n_ * sizeof(float); }

 private:
  [[noreturn]] static void no_wire() {
    SB_FAIL(
        "numerics.leaf_sum=native keeps fp32 sums, which have no exact all-reduce wire: use "
        "numerics.allreduce=native with it");
  }
  Backend& be_;
  Tensor sum_;  // (n) fp32, backend memory
  size_t n_;
  uint64_t adds_ = 0;
};

}  // namespace

std::unique_ptr<GradAccumulator> Backend::make_native_accumulator(size_t n) {
  return std::make_unique<NativeGradAccumulator>(*this, n);
}

}  // namespace sb
