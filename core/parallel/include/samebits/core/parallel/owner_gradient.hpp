// The batch gradient where each rank holds only its own tensors' exact sums: the exact
// reduce-scatter under the distributed optimizer (docs/DISTRIBUTED.md §3, §7). Each owner computes
// its tensors' fingerprints and exact sums (Σ g², Σ g, max |g|); one int64 SUM all-reduce of
// O(tensors) words — the other ranks contribute zeros, so every tensor's words are its owner's —
// and of the owners' partial Σ g² (ExactSum words: integer, any grouping) gives every rank what a
// rank holding the whole gradient computes, bit for bit: the fingerprints, the per-tensor
// statistics' sums, the exact ‖G‖² of the clip.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/core/parallel/communicator.hpp"
#include "samebits/core/parallel/ownership.hpp"
#include "samebits/core/step_stats.hpp"
#include "samebits/det/exact_sum.hpp"

namespace sb {

struct SharedGradient {
  std::vector<uint64_t> fingerprints;    // (tensors) det::fingerprint of each tensor; empty when off
  std::vector<TensorBatchSums> tensors;  // (tensors) empty unless statistics were asked for
  det::ExactSum squares;                 // Σ over every tensor of Σ g² (exact)
};

class OwnerGradient {
 public:
  // layout: the model's tensors; ownership: the distributed optimizer's (one owner per tensor).
  // backend and comm must outlive it.
  OwnerGradient(std::vector<ParamView> layout, const Ownership& ownership, Backend& backend, Communicator& comm);

  // need()[r]: the spans of rank r's tensors (exact_reduce_scatter's parts).
  const std::vector<std::vector<TensorSpan>>& need() const { return need_; }

  // Collective. grad: (flat_size) backend memory, exact on this rank's tensors (what the
  // reduce-scatter and the rounding left; the rest is not read). fingerprints / statistics: what
  // to compute besides the squares.
  SharedGradient share(const float* grad, bool fingerprints, bool statistics);

  // grad[i] ← fl32(grad[i] · factor) on this rank's tensors (the clip's multiply).
  void scale_owned(float* grad, float factor);

 private:
  std::vector<ParamView> layout_;
  Backend& backend_;
  Communicator& comm_;
  std::vector<std::vector<TensorSpan>> need_;  // [rank] its tensors' spans
  std::vector<size_t> mine_;                   // this rank's tensors, layout order
  std::unique_ptr<TensorSums> sums_;           // over need_[rank]; null when it owns none
};

}  // namespace sb
