// Per-tensor exact sums and fingerprints on host memory (backend.hpp TensorSums,
// Backend::fingerprints): OpenMP over fixed blocks of kBinnedBlock elements, each block's binned
// exact sums merged into its tensor's; max |x| as fp32 bits. Exact, so the thread count never
// changes a bit; the fingerprints are det::fingerprint itself, one tensor per OpenMP task.
#include <algorithm>
#include <utility>

#include "cpu_backend_class.hpp"
#include "host_tensor_sums.hpp"
#include "samebits/core/exact_norm.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fingerprint.hpp"

namespace sb {
namespace cpu {

HostTensorSums::HostTensorSums(std::vector<TensorSpan> spans)
    : spans_(std::move(spans)),
      by_offset_(spans_),
      squares_(spans_.size()),
      sums_(spans_.size()),
      max_bits_(spans_.size(), 0) {
  std::sort(by_offset_.begin(), by_offset_.end(),
            [](const TensorSpan& x, const TensorSpan& y) { return x.offset < y.offset; });
  for (size_t t = 0; t < spans_.size(); ++t) {
    const size_t begin = spans_[t].offset, end = begin + spans_[t].numel;
    for (size_t b = begin; b < end; b += kBinnedBlock) blocks_.push_back({t, b, std::min(end, b + kBinnedBlock)});
  }
}

void HostTensorSums::clear() {
  for (size_t t = 0; t < spans_.size(); ++t) {
    squares_[t].clear();
    sums_[t].clear();
    max_bits_[t] = 0;
  }
}

void HostTensorSums::add(const float* flat, bool moments) {
  const size_t nb = blocks_.size();
  std::vector<det::ExactSum> sq(nb), sm(moments ? nb : 0);  // (blocks)
  std::vector<uint32_t> mx(moments ? nb : 0);               // (blocks)
  const ptrdiff_t count = static_cast<ptrdiff_t>(nb);
  // Dynamic: the blocks range from a bias (C floats) to kBinnedBlock; each block's sums land in
  // its own slot, merged in block order below, so the schedule cannot change a bit.
#pragma omp parallel for schedule(dynamic, 1)
  for (ptrdiff_t b = 0; b < count; ++b) {
    const Block& k = blocks_[size_t(b)];
    sq[size_t(b)] = binned_sum_of_squares(flat + k.begin, k.end - k.begin);
    if (!moments) continue;
    sm[size_t(b)] = binned_sum(flat + k.begin, k.end - k.begin);
    uint32_t best = 0;
    for (size_t i = k.begin; i < k.end; ++i) best = std::max(best, abs_bits(flat[i]));
    mx[size_t(b)] = best;
  }
  for (size_t b = 0; b < nb; ++b) {
    const size_t t = blocks_[b].tensor;
    squares_[t].merge(sq[b]);
    if (!moments) continue;
    sums_[t].merge(sm[b]);
    max_bits_[t] = std::max(max_bits_[t], mx[b]);
  }
}

void HostTensorSums::add_squares_of(const float* flat, const std::vector<size_t>& tensors) {
  for (size_t t : tensors) {
    SB_CHECK(t < spans_.size(), "tensor sums: tensor ", t, " of ", spans_.size());
    squares_[t].merge(binned_sum_of_squares(flat + spans_[t].offset, spans_[t].numel));
  }
}

// A block's squares of a and b merged into one slot: exact sums, so squares_[t] gets the value and
// the term counts that add(a), add(b) give.
uint32_t HostTensorSums::add_squares_visiting(const float* a, const float* b,
                                              const std::function<uint32_t(size_t, size_t)>& visit) {
  const size_t nb = blocks_.size();
  std::vector<det::ExactSum> sq(nb);  // (blocks)
  const ptrdiff_t count = static_cast<ptrdiff_t>(nb);
  uint32_t status = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(| : status)
  for (ptrdiff_t i = 0; i < count; ++i) {
    const Block& k = blocks_[size_t(i)];
    status |= visit(k.begin, k.end);
    sq[size_t(i)] = binned_sum_of_squares(a + k.begin, k.end - k.begin);
    if (b != nullptr) sq[size_t(i)].merge(binned_sum_of_squares(b + k.begin, k.end - k.begin));
  }
  for (size_t i = 0; i < nb; ++i) squares_[blocks_[i].tensor].merge(sq[i]);
  return status;
}

void HostTensorSums::read(det::ExactSum* squares, det::ExactSum* sums, float* max_abs) {
  for (size_t t = 0; t < spans_.size(); ++t) {
    squares[t] = squares_[t];
    if (sums != nullptr) sums[t] = sums_[t];
    if (max_abs != nullptr) max_abs[t] = max_abs_of_bits(max_bits_[t]);
  }
}

}  // namespace cpu

std::unique_ptr<TensorSums> make_host_tensor_sums(std::vector<TensorSpan> spans) {
  return std::make_unique<cpu::HostTensorSums>(std::move(spans));
}

namespace cpu {

std::unique_ptr<TensorSums> CpuBackend::make_tensor_sums(std::vector<TensorSpan> spans) {
  return make_host_tensor_sums(std::move(spans));
}

void CpuBackend::fingerprints(const float* flat, const std::vector<TensorSpan>& spans, uint64_t* out) {
  // One tensor per task (dynamic: tensors from C floats to the embedding), each its own slot.
  const ptrdiff_t count = static_cast<ptrdiff_t>(spans.size());
#pragma omp parallel for schedule(dynamic, 1) if (count > 1)
  for (ptrdiff_t t = 0; t < count; ++t)
    out[t] = det::fingerprint(flat + spans[size_t(t)].offset, spans[size_t(t)].numel);
}

}  // namespace cpu
}  // namespace sb
