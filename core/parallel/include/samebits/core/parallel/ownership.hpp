// Which rank updates which tensor under the distributed optimizer (ZeRO-1 style, docs/DISTRIBUTED.md):
// whole tensors, balanced by update cost (Newton–Schulz flops for Muon matrices, element counts
// for AdamW tensors). Contract: a pure function of (costs, world size) — every rank computes the
// same assignment, and a run resumed at another world size recomputes it from the same inputs.
#pragma once
#include <cstddef>
#include <vector>

namespace sb {

struct Ownership {
  std::vector<int> owner;    // (tensors) the rank that updates tensor i and holds its state
  std::vector<double> load;  // (world) the summed cost of each rank's tensors

  int world() const { return static_cast<int>(load.size()); }
  // (tensors) owner[i] == rank, the mask Optimizer::set_owned takes.
  std::vector<bool> owned_by(int rank) const;
  // max(load) / mean(load): 1 is perfect balance.
  double imbalance() const;
};

// Greedy longest-processing-time assignment: tensors in decreasing cost (equal costs: lower index
// first), each to the rank with the least load so far (equal loads: lower rank). Costs are
// integers below 2^53 in practice, so the loads are exact and the assignment is the same on every
// machine. Throws sb::Error when world < 1 or a cost is negative or not finite.
Ownership assign_owners(const std::vector<double>& cost, int world);

}  // namespace sb
