// The rule-4 gradient accumulator on the GPU: det::FixedAccumulator's limbs in device memory, in
// its limb-major layout (limb j of element i at [j·n + i]) and default window. One thread per
// element runs det::fixed_add / fixed_normalize / fixed_round_f32 — integer arithmetic only; the
// status bits meet through an integer atomicOr. The exact all-reduce's wire (det/block_wire.hpp):
// one thread per block of det::kWireBlock elements runs det::wire_block_range, one thread per
// segment det::wire_encode_segment / wire_decode_segment, the CPU's code, so the ranges and words
// are core/cpu's for any launch.
#include <cub/device/device_scan.cuh>

#include <memory>
#include <vector>

#include "cuda_backend_class.hpp"
#include "elementwise.cuh"
#include "samebits/core/ops/gradient.hpp"
#include "samebits/det/block_wire.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fixed_accumulator.hpp"
#include "samebits/det/fixed_point.hpp"
#include "samebits/det/wide_int.hpp"

namespace sb::cuda {
namespace {

using det::FixedAccumulator;
using det::FixedWindow;

// limbs += x element-wise; refused values OR their bits into *status.
__global__ void fixed_add_kernel(int64_t* limbs /* (L, n) */, const float* x /* (n) */, int64_t n, FixedWindow w,
                                 uint32_t* status) {
  uint32_t local = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    det::fixed_add(limbs + i, static_cast<size_t>(n), x[i], w, &local);
  if (local != 0) atomicOr(status, local);
}

// ranges[b] = max(ranges[b], the ranges of x's values in block b).
struct WireRanges {
  det::WireRange* ranges;  // (blocks)
  const float* x;          // (n)
  int64_t n;
  FixedWindow w;
  __device__ void operator()(int64_t b) const {
    ranges[b] =
        det::wire_range_max(ranges[b], det::wire_block_range(x + b * det::kWireBlock, det::wire_count(b, n), w));
  }
};

struct WireWords {
  uint64_t* words;  // (segments)
  const det::WireRange* ranges;
  int64_t n;
  uint64_t total_adds;
  __device__ void operator()(int64_t s) const { words[s] = det::wire_segment_words(ranges, s, n, total_adds); }
};

// Element e of block b, in units of 2^lo, from (to) the limb-major limbs.
struct LimbValue {
  const int64_t* limbs;  // (L, n)
  size_t n;
  __device__ det::Wide192 operator()(int64_t b, int e, int lo) const {
    return det::wide_sar(det::wide_from_limbs(limbs + b * det::kWireBlock + e, n), lo);
  }
};
struct LimbStore {
  int64_t* limbs;
  size_t n;
  __device__ void operator()(int64_t b, int e, int lo, const det::Wide192& v) const {
    det::wide_to_limbs(det::wide_shl(v, lo), limbs + b * det::kWireBlock + e, n);
  }
};

// Segments [first, first + count) of the wire, their words at wire + (offset[s] - offset[first]):
// one run of the reduce-scatter's order.
struct WireEncode {
  uint64_t* wire;
  const uint64_t* offset;  // (segments + 1) exclusive prefix sums of the words
  uint64_t first_offset;   // offset[first]
  int64_t first;
  const det::WireRange* ranges;
  const int64_t* limbs;  // (L, n)
  int64_t n;
  uint64_t total_adds, local_adds;
  __device__ void operator()(int64_t i) const {
    const int64_t s = first + i;
    det::wire_encode_segment(wire + (offset[s] - first_offset), ranges, s, n, total_adds, local_adds,
                             LimbValue{limbs, static_cast<size_t>(n)});
  }
};

struct WireDecode {
  uint64_t* wire;
  const uint64_t* offset;
  uint64_t first_offset;
  int64_t first;
  const det::WireRange* ranges;
  int64_t* limbs;  // (L, n)
  int64_t n;
  uint64_t total_adds;
  __device__ void operator()(int64_t i) const {
    const int64_t s = first + i;
    det::wire_decode_segment(wire + (offset[s] - first_offset), ranges, s, n, total_adds,
                             LimbStore{limbs, static_cast<size_t>(n)});
  }
};

struct FixedNormalize {
  int64_t* limbs;  // (L, n)
  int64_t n;
  FixedWindow w;
  __device__ void operator()(int64_t i) const { det::fixed_normalize(limbs + i, static_cast<size_t>(n), w); }
};

struct FixedRound {
  float* out;            // (n)
  const int64_t* limbs;  // (L, n)
  int64_t n;
  FixedWindow w;
  float divisor;
  __device__ void operator()(int64_t i) const {
    out[i] = ops::leaf_mean(det::fixed_round_f32(limbs + i, static_cast<size_t>(n), w), divisor);
  }
};

class CudaGradAccumulator final : public GradAccumulator {
 public:
  CudaGradAccumulator(CudaBackend& be, size_t n)
      : be_(be),
        n_(n),
        blocks_(static_cast<size_t>(det::wire_blocks(static_cast<int64_t>(n)))),
        segments_(static_cast<size_t>(det::wire_segments(static_cast<int64_t>(n)))),
        limbs_(be.alloc(DType::i64, {static_cast<int64_t>(n) * window_.limbs})),
        status_dev_(be.alloc(DType::i32, {1})),
        ranges_(be.alloc(DType::i32, {static_cast<int64_t>((blocks_ * sizeof(det::WireRange) + 3) / 4)})),
        offsets_(be.alloc(DType::i64, {static_cast<int64_t>(segments_ + 1)})) {}
  using GradAccumulator::decode;
  using GradAccumulator::encode;

  size_t size() const override { return n_; }

  void clear() override {
    be_.zero(limbs_.data(), limbs_.bytes());
    be_.zero(status_dev_.data(), sizeof(uint32_t));
    be_.zero(ranges_.data(), ranges_.bytes());
    status_.clear();
    pending_ = 0;
  }

  void add(const float* grad) override {
    be_.activate();
    if (pending_ >= FixedAccumulator::kMaxPending) normalize();
    pending_ += 1;
    status_.count_adds(1);
    if (n_ == 0) return;
    const int threads = be_.launch().block_threads;
    fixed_add_kernel<<<grid_for(static_cast<int64_t>(n_), threads), threads, 0, be_.stream()>>>(
        limbs(), grad, static_cast<int64_t>(n_), window_, status_word());
    SB_CUDA_CHECK_LAUNCH();
    for_each(be_, static_cast<int64_t>(blocks_), WireRanges{ranges(), grad, static_cast<int64_t>(n_), window_});
  }

  void round(float* out, float divisor) override {
    check("the batch gradient");
    be_.activate();
    for_each(be_, static_cast<int64_t>(n_), FixedRound{out, limbs(), static_cast<int64_t>(n_), window_, divisor});
  }

  uint64_t adds() const override { return status_.adds; }

  // The host's bits (the add-count overflow, an all-reduced status) with the device's.
  uint32_t status() const override {
    uint32_t dev = 0;
    be_.activate();
    be_.download(&dev, status_dev_.data(), sizeof dev);
    return status_.bits | dev;
  }

  uint8_t* block_ranges() override { return static_cast<uint8_t*>(ranges_.data()); }
  size_t range_bytes() const override { return blocks_ * sizeof(det::WireRange); }

  uint64_t* encode(uint64_t total_adds, const std::vector<WireRun>& runs, uint64_t* run_words) override {
    be_.activate();
    layout(total_adds);
    size_t total = 0;
    for (size_t k = 0; k < runs.size(); ++k) {
      const uint64_t w = run_span(runs[k]);
      if (run_words != nullptr) run_words[k] = w;
      total += w;
    }
    if (!wire_.defined() || wire_.bytes() < total * sizeof(uint64_t)) {
      wire_ = be_.alloc(DType::u64, {static_cast<int64_t>(total > 0 ? total : 1)});
    }
    size_t at = 0;
    for (const WireRun& r : runs) {
      if (r.last > r.first) {
        for_each(be_, r.last - r.first,
                 WireEncode{wire() + at, offsets(), host_offsets_[size_t(r.first)], r.first, ranges(), limbs(),
                            static_cast<int64_t>(n_), total_adds, status_.adds});
      }
      at += run_span(r);
    }
    wire_words_ = total;
    return wire();
  }

  void decode(uint64_t total_adds, uint32_t total_status, const std::vector<WireRun>& runs,
              size_t first_word) override {
    be_.activate();
    layout(total_adds);
    size_t end = first_word;
    for (size_t k = 0; k < runs.size(); ++k) {
      SB_CHECK(k == 0 || runs[k - 1].last <= runs[k].first,
               "GradAccumulator::decode: wire runs "
               "must be ascending and disjoint; run ",
               k, " starts at segment ", runs[k].first, " before the previous one ends (", runs[k - 1].last, ")");
      end += run_span(runs[k]);
    }
    SB_CHECK(end <= wire_words_,
             "GradAccumulator::decode: the agreed ranges give the decoded "
             "segments words up to ",
             end, ", but encode() wrote ", wire_words_,
             "; every rank must encode with the same MAX-reduced ranges and total add count");
    size_t at = first_word;
    for (const WireRun& r : runs) {
      if (r.last > r.first) {
        for_each(be_, r.last - r.first,
                 WireDecode{wire() + at, offsets(), host_offsets_[size_t(r.first)], r.first, ranges(), limbs(),
                            static_cast<int64_t>(n_), total_adds});
      }
      at += run_span(r);
    }
    be_.zero(status_dev_.data(), sizeof(uint32_t));  // total_status already holds this rank's bits
    status_.reduced(total_adds, total_status);
    pending_ = 0;  // the decoded limbs are canonical
  }

  size_t memory_bytes() const override {
    return limbs_.bytes() + ranges_.bytes() + offsets_.bytes() + (wire_.defined() ? wire_.bytes() : 0) +
           (scan_.defined() ? scan_.bytes() : 0);
  }

 private:
  uint32_t* status_word() { return reinterpret_cast<uint32_t*>(status_dev_.data()); }
  det::WireRange* ranges() { return reinterpret_cast<det::WireRange*>(ranges_.data()); }
  uint64_t* offsets() { return reinterpret_cast<uint64_t*>(offsets_.data()); }
  uint64_t* wire() { return reinterpret_cast<uint64_t*>(wire_.data()); }

  // offsets_ = exclusive prefix sums of every segment's words (cub's scan: integer, exact), and
  // their host copy host_offsets_ (segments + 1).
  void layout(uint64_t total_adds) {
    be_.zero(offsets_.data(), offsets_.bytes());
    host_offsets_.assign(segments_ + 1, 0);
    if (segments_ == 0) return;
    for_each(be_, static_cast<int64_t>(segments_),
             WireWords{offsets() + 1, ranges(), static_cast<int64_t>(n_), total_adds});
    size_t temp = 0;
    SB_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, temp, offsets() + 1, offsets() + 1,
                                                static_cast<int64_t>(segments_), be_.stream()));
    if (!scan_.defined() || scan_.bytes() < temp) {
      scan_ = be_.alloc(DType::i64, {static_cast<int64_t>(temp / 8 + 1)});
    }
    SB_CUDA_CHECK(cub::DeviceScan::InclusiveSum(scan_.data(), temp, offsets() + 1, offsets() + 1,
                                                static_cast<int64_t>(segments_), be_.stream()));
    be_.download(host_offsets_.data(), offsets(), host_offsets_.size() * sizeof(uint64_t));
  }

  // The words of run r (after layout); throws for a run outside the wire.
  uint64_t run_span(const WireRun& r) const {
    SB_CHECK(0 <= r.first && r.first <= r.last && r.last <= static_cast<int64_t>(segments_),
             "GradAccumulator: wire run [", r.first, ", ", r.last, ") outside the ", segments_,
             " segments of the wire");
    return host_offsets_[size_t(r.last)] - host_offsets_[size_t(r.first)];
  }

  void normalize() {
    be_.activate();
    for_each(be_, static_cast<int64_t>(n_), FixedNormalize{limbs(), static_cast<int64_t>(n_), window_});
    pending_ = 0;
  }

  void check(const char* what) const { det::check_fixed_status(what, status(), window_, det::kGradientOverflowAdvice); }

  int64_t* limbs() { return limbs_.data_as<int64_t>(); }

  CudaBackend& be_;
  size_t n_;
  size_t blocks_;
  size_t segments_;
  FixedWindow window_ = det::kGradientWindow;
  Tensor limbs_;                        // (limbs, n) i64, limb-major
  Tensor status_dev_;                   // (1) the device's status bits (kFixed*)
  Tensor ranges_;                       // (blocks) det::WireRange
  Tensor offsets_;                      // (segments + 1) u64: wire word offsets
  Tensor wire_;                         // (wire words) i64
  Tensor scan_;                         // cub's scan scratch
  std::vector<uint64_t> host_offsets_;  // (segments + 1) offsets_' host copy
  size_t wire_words_ = 0;
  det::FixedStatus status_;  // host-side bits (add-count overflow, all-reduced status), adds
  uint32_t pending_ = 0;     // adds since the last carry propagation
};

}  // namespace

std::unique_ptr<GradAccumulator> CudaBackend::make_accumulator(size_t n) {
  activate();
  return std::make_unique<CudaGradAccumulator>(*this, n);
}

}  // namespace sb::cuda
