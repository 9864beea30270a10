// Newton–Schulz on the shards of one matrix held by a group of ranks (optim.tp_mode = distributed
// or distributed_exact, docs/DISTRIBUTED.md §10; Emerging-Optimizers' newton_schulz_tp, mode
// "distributed"). Y = op(X) (r, c) is split by columns: rank i holds Y_i (r, c_i), so
// Y·Yᵀ = Σ_i Y_i·Y_iᵀ and ‖Y‖²_F = Σ_i ‖Y_i‖²_F. The norm's sum is exact (integer words: the full
// matrix's exact norm, bit for bit); the Gram's sum is the group's rule (core/parallel/tp_ns_group.hpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "samebits/core/backend.hpp"
#include "samebits/det/exact_sum.hpp"

namespace sb {

class NsGroup {
 public:
  virtual ~NsGroup() = default;
  virtual int size() const = 0;  // ranks in the group
  // Σ over the group of every rank's s, exactly. Collective.
  virtual det::ExactSum sum_exact(const det::ExactSum& s) = 0;
  // a ← Σ over the group of every rank's a (the ranks' partial Gram matrices, each symmetric; the
  // sum is too and is the same on every rank). Collective.  a: (n), backend memory.
  virtual void sum_gram(float* a, size_t n) = 0;
};

// How one rank holds a Muon matrix. group null: the whole matrix (one-process Muon). Otherwise
// this rank's shard of the full (rows, cols) matrix X: y = no when the columns of X are split
// (Y = X), y = yes when its rows are (Y = Xᵀ); the full shape sets the scale rule.
struct MatrixShard {
  std::shared_ptr<NsGroup> group;
  Trans y = Trans::no;
  int64_t rows = 0, cols = 0;
};

}  // namespace sb
