// The host TensorSums (backend.hpp; internal to core/cpu): per-tensor exact sums over host memory,
// OpenMP over fixed blocks of at most kBinnedBlock elements of one tensor, each block's binned exact
// sums in its own slot, merged in block order. Exact, so the thread count never changes a bit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/det/exact_sum.hpp"

namespace sb::cpu {

class HostTensorSums final : public TensorSums {
 public:
  explicit HostTensorSums(std::vector<TensorSpan> spans);

  void clear() override;
  void add(const float* flat, bool moments) override;
  void add_squares_of(const float* flat, const std::vector<size_t>& tensors) override;
  void read(det::ExactSum* squares, det::ExactSum* sums, float* max_abs) override;

  // add(a, false), then add(b, false) unless b is null, in one pass: each block's thread first calls
  // visit(first, last) for the flat elements [first, last) the block covers (every block once, so
  // a caller's own pass over the same elements finds them in cache), then takes the squares of a
  // and b there. Returns the OR of visit's results.  a, b: flat host memory.
  uint32_t add_squares_visiting(const float* a, const float* b, const std::function<uint32_t(size_t, size_t)>& visit);
  const std::vector<TensorSpan>& spans_by_offset() const { return by_offset_; }  // the spans, sorted

 private:
  struct Block {  // elements [begin, end) of tensor `tensor`
    size_t tensor, begin, end;
  };
  std::vector<TensorSpan> spans_, by_offset_;
  std::vector<Block> blocks_;
  std::vector<det::ExactSum> squares_, sums_;  // (spans)
  std::vector<uint32_t> max_bits_;             // (spans) max of abs_bits
};

}  // namespace sb::cpu
