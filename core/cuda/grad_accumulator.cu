// The rule-4 gradient accumulator on the GPU: det::FixedAccumulator's limbs in device memory, in
// its limb-major layout (limb j of element i at [j·n + i]) and default window, so the limbs can be
// all-reduced with NCCL (ncclInt64, ncclSum) and compared bitwise with the CPU's. One thread per
// element runs det::fixed_add / fixed_normalize / fixed_round_f32 — integer arithmetic only; the
// status bits meet through an integer atomicOr. Bitwise core/cpu's accumulator for any launch.
#include <memory>

#include "cuda_backend.hpp"
#include "elementwise.cuh"
#include "samebits/core/ops/gradient.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fixed_accumulator.hpp"
#include "samebits/det/fixed_point.hpp"

namespace sb::cuda {
namespace {

using det::FixedAccumulator;
using det::FixedWindow;

// limbs += x element-wise; refused values OR their bits into *status.
__global__ void fixed_add_kernel(int64_t* limbs /* (L, n) */, const float* x /* (n) */, int64_t n,
                                 FixedWindow w, uint32_t* status) {
  uint32_t local = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    det::fixed_add(limbs + i, static_cast<size_t>(n), x[i], w, &local);
  if (local != 0) atomicOr(status, local);
}

struct FixedNormalize {
  int64_t* limbs;  // (L, n)
  int64_t n;
  FixedWindow w;
  __device__ void operator()(int64_t i) const {
    det::fixed_normalize(limbs + i, static_cast<size_t>(n), w);
  }
};

struct FixedRound {
  float* out;            // (n)
  const int64_t* limbs;  // (L, n)
  int64_t n;
  FixedWindow w;
  float divisor;
  __device__ void operator()(int64_t i) const {
    out[i] = ops::batch_gradient(det::fixed_round_f32(limbs + i, static_cast<size_t>(n), w), divisor);
  }
};

class CudaGradAccumulator final : public GradAccumulator {
 public:
  CudaGradAccumulator(CudaBackend& be, size_t n)
      : be_(be),
        n_(n),
        limbs_(be.alloc(DType::i64, {static_cast<int64_t>(n) * window_.limbs})),
        status_dev_(be.alloc(DType::i32, {1})) {}

  size_t size() const override { return n_; }

  void clear() override {
    be_.zero(limbs_.data(), limbs_.bytes());
    be_.zero(status_dev_.data(), sizeof(uint32_t));
    status_ = 0;
    pending_ = 0;
    adds_ = 0;
  }

  void add(const float* grad) override {
    be_.activate();
    if (pending_ >= FixedAccumulator::kMaxPending) normalize();
    pending_ += 1;
    count_adds(1);
    if (n_ == 0) return;
    const int threads = be_.launch().block_threads;
    fixed_add_kernel<<<grid_for(static_cast<int64_t>(n_), threads), threads, 0, be_.stream()>>>(
        limbs(), grad, static_cast<int64_t>(n_), window_, status_word());
    SB_CUDA_CHECK_LAUNCH();
  }

  void round(float* out, float divisor) override {
    check("the batch gradient");
    be_.activate();
    for_each(be_, static_cast<int64_t>(n_),
             FixedRound{out, limbs(), static_cast<int64_t>(n_), window_, divisor});
  }

  int64_t* limbs() override { return limbs_.data_as<int64_t>(); }
  size_t limb_count() const override { return n_ * static_cast<size_t>(window_.limbs); }
  uint64_t adds() const override { return adds_; }

  // The host's bits (the add-count overflow, an all-reduced status) with the device's.
  uint32_t status() const override {
    uint32_t dev = 0;
    be_.activate();
    be_.download(&dev, status_dev_.data(), sizeof dev);
    return status_ | dev;
  }

  void finish_allreduce(int ranks, uint64_t total_adds, uint32_t total_status) override {
    SB_CHECK(ranks >= 1 && ranks <= FixedAccumulator::kMaxRanks,
             "GradAccumulator::finish_allreduce: expected 1..", FixedAccumulator::kMaxRanks,
             " ranks (the int64 headroom of un-normalized limbs), seen ", ranks);
    be_.zero(status_dev_.data(), sizeof(uint32_t));  // total_status already holds this rank's bits
    adds_ = 0;
    status_ = total_status;
    count_adds(total_adds);
    normalize();
  }

 private:
  uint32_t* status_word() { return reinterpret_cast<uint32_t*>(status_dev_.data()); }

  void count_adds(uint64_t more) {
    adds_ += more;
    if (adds_ > FixedAccumulator::kMaxAdds) status_ |= det::kFixedOverflow;
  }

  void normalize() {
    be_.activate();
    for_each(be_, static_cast<int64_t>(n_), FixedNormalize{limbs(), static_cast<int64_t>(n_), window_});
    pending_ = 0;
  }

  // det::FixedAccumulator::check's rule and message.
  void check(const char* what) const {
    const uint32_t s = status();
    if (s == 0) return;
    SB_FAIL(what, ": the fixed-point accumulator refused values (status ", s, ":",
            (s & det::kFixedOverflow) ? " overflow" : "", (s & det::kFixedNaN) ? " NaN" : "",
            (s & det::kFixedInf) ? " Inf" : "", "); expected finite values below 2^",
            det::fixed_top_exponent(window_), " and at most ", FixedAccumulator::kMaxAdds,
            " adds per element. For overflow, widen the window (more limbs or a higher "
            "lsb_exponent); NaN/Inf come from the values themselves.");
  }

  CudaBackend& be_;
  size_t n_;
  FixedWindow window_{};  // det::FixedAccumulator's default window
  Tensor limbs_;          // (limbs, n) i64, limb-major
  Tensor status_dev_;     // (1) the device's status bits (kFixed*)
  uint32_t status_ = 0;   // host-side bits: add-count overflow, all-reduced status
  uint32_t pending_ = 0;  // adds since the last carry propagation
  uint64_t adds_ = 0;
};

}  // namespace

std::unique_ptr<GradAccumulator> CudaBackend::make_accumulator(size_t n) {
  activate();
  return std::make_unique<CudaGradAccumulator>(*this, n);
}

}  // namespace sb::cuda
