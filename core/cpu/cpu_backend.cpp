// The CPU backend: host memory, the rule-4 gradient accumulator (det::BlockAccumulator), the
// optimizers' host loops and the row-sum helpers shared by the op files. Results never depend on
// the OpenMP thread count.
#include "cpu_backend_class.hpp"
#include "host_tensor_sums.hpp"

#include <omp.h>

#include <cstring>
#include <vector>

#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/ops/gradient.hpp"
#include "samebits/core/optim_kernels.hpp"
#include "samebits/core/parallel_zero.hpp"
#include "samebits/det/block_accumulator.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/lane32.hpp"

namespace sb {

namespace cpu {
namespace {

class CpuGradAccumulator final : public GradAccumulator {
 public:
  explicit CpuGradAccumulator(size_t n) : acc_(n) {}
  using GradAccumulator::decode;
  using GradAccumulator::encode;
  size_t size() const override { return acc_.size(); }
  void clear() override { acc_.clear(); }
  void add(const float* grad) override { acc_.add(grad); }
  void add_spans(const float* grad, const std::vector<TensorSpan>& spans) override {
    std::vector<std::pair<size_t, size_t>> ranges;
    for (const TensorSpan& t : spans) ranges.emplace_back(t.offset, t.numel);
    acc_.add_ranges(grad, ranges);
  }
  // One pass for the leaves and their statistics: each statistics block's thread adds the
  // accumulator blocks that start in it (two leaves' values each: add_pair's state), then takes the
  // squares of the same elements while they are in cache; the blocks starting between the tensors
  // (alignment padding) follow. Every block is added once, so the state is that of add, add, and
  // the squares are add(a), add(b)'s (integer and exact sums: test_leaf_pass).
  void add_leaves(const float* a, const float* b, TensorSums* squares) override {
    auto* host = dynamic_cast<HostTensorSums*>(squares);
    if (host == nullptr) {
      if (b != nullptr) {
        acc_.add_pair(a, b);
      } else {
        acc_.add(a);
      }
      if (squares != nullptr) squares->add(a, false);
      if (squares != nullptr && b != nullptr) squares->add(b, false);
      return;
    }
    constexpr size_t W = det::kWireBlock;
    const uint64_t count = b != nullptr ? 2 : 1, adds_after = acc_.adds() + count;
    uint32_t status = host->add_squares_visiting(a, b, [&](size_t first, size_t last) {
      return acc_.add_blocks(a, b, (first + W - 1) / W, (last + W - 1) / W, adds_after);
    });
    size_t covered = 0;  // the wire blocks before this one have been added
    for (const TensorSpan& t : host->spans_by_offset()) {
      status |= acc_.add_blocks(a, b, covered, (t.offset + W - 1) / W, adds_after);
      covered = (t.offset + t.numel + W - 1) / W;
    }
    status |= acc_.add_blocks(a, b, covered, acc_.blocks(), adds_after);
    acc_.finish_adds(status, count);
  }
  void round(float* out, float divisor) override {
    acc_.check("the batch gradient");
    acc_.round_to_fp32(out);
    const int64_t n = static_cast<int64_t>(acc_.size());
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) out[i] = ops::leaf_mean(out[i], divisor);
  }
  uint64_t adds() const override { return acc_.adds(); }
  uint32_t status() const override { return acc_.status(); }
  uint8_t* block_ranges() override { return acc_.ranges(); }
  size_t range_bytes() const override { return acc_.range_bytes(); }
  size_t wire_words(uint64_t total_adds) override { return acc_.wire_words(total_adds); }
  uint64_t* encode(uint64_t total_adds, const std::vector<WireRun>& runs, uint64_t* run_words) override {
    acc_.encode(total_adds, runs, run_words);
    return acc_.wire();
  }
  void decode(uint64_t total_adds, uint32_t total_status, const std::vector<WireRun>& runs,
              size_t first_word) override {
    acc_.decode(total_adds, total_status, runs, first_word);
  }
  size_t memory_bytes() const override { return acc_.memory_bytes(); }

 private:
  det::BlockAccumulator acc_;
};

const char* simd_level() {
#if defined(SB_HAVE_AVX512)
  return "AVX512";
#elif defined(SB_HAVE_AVX2)
  return "AVX2";
#else
  return "scalar";
#endif
}

}  // namespace

std::string CpuBackend::describe() const {
  return detail::concat("cpu (", omp_get_max_threads(), " OpenMP threads, ", simd_level(), ", ",
                        sb::describe(numerics()), ")");
}

Tensor CpuBackend::alloc(DType dtype, Shape shape) { return Tensor::host(dtype, std::move(shape)); }

void CpuBackend::copy_from_host(void* dst, const void* host_src, size_t bytes) {
  count_from_host(bytes);
  if (bytes) std::memcpy(dst, host_src, bytes);
}
void CpuBackend::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  count_to_host(bytes);
  if (bytes) std::memcpy(host_dst, src, bytes);
}
void CpuBackend::copy(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
}
void CpuBackend::zero(void* dst, size_t bytes) { cpu::parallel_zero(dst, bytes); }

std::unique_ptr<GradAccumulator> CpuBackend::make_accumulator(size_t n) {
  return std::make_unique<CpuGradAccumulator>(n);
}

OptimKernels& CpuBackend::optim_kernels() { return host_optim_kernels(); }

// Native: 16 float partials (partial j takes the elements i ≡ j mod 16, the form a vectorising
// compiler gives a float sum), added in order at the end — vendor numerics, no canonical order.
float row_sum(const float* x, int n, ReduceMode mode) {
  if (mode == ReduceMode::canonical) return det::lane32_sum(x, static_cast<size_t>(n));
  float part[16] = {};
  int i = 0;
  for (; i + 16 <= n; i += 16) {
#pragma omp simd
    for (int j = 0; j < 16; ++j) part[j] += x[i + j];
  }
  for (; i < n; ++i) part[i % 16] += x[i];
  float s = 0.0f;
  for (const float p : part) s += p;
  return s;
}

float row_dot(const float* x, const float* y, int n, ReduceMode mode) {
  if (mode == ReduceMode::canonical) return det::lane32_dot(x, y, static_cast<size_t>(n));
  float part[16] = {};
  int i = 0;
  for (; i + 16 <= n; i += 16) {
#pragma omp simd
    for (int j = 0; j < 16; ++j) part[j] = det::fma_f32(x[i + j], y[i + j], part[j]);
  }
  for (; i < n; ++i) part[i % 16] = det::fma_f32(x[i], y[i], part[i % 16]);
  float s = 0.0f;
  for (const float p : part) s += p;
  return s;
}

}  // namespace cpu

std::unique_ptr<Backend> make_cpu_backend(Numerics numerics) { return std::make_unique<cpu::CpuBackend>(numerics); }

}  // namespace sb
