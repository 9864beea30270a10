// assign_owners (parallel/ownership.hpp): greedy LPT over whole tensors. Deterministic: a stable order
// of the tensors and explicit tie-breaks, no hashing, no dependence on the caller's rank.
#include "samebits/core/parallel/ownership.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "samebits/det/error.hpp"

namespace sb {

std::vector<bool> Ownership::owned_by(int rank) const {
  std::vector<bool> mask(owner.size());
  for (size_t i = 0; i < owner.size(); ++i) mask[i] = owner[i] == rank;
  return mask;
}

double Ownership::imbalance() const {
  const double total = std::accumulate(load.begin(), load.end(), 0.0);
  if (total <= 0.0) return 1.0;
  return *std::max_element(load.begin(), load.end()) * static_cast<double>(load.size()) / total;
}

Ownership assign_owners(const std::vector<double>& cost, int world) {
  SB_CHECK(world >= 1, "assign_owners: the world size must be at least 1, got ", world);
  for (size_t i = 0; i < cost.size(); ++i) {
    SB_CHECK(std::isfinite(cost[i]) && cost[i] >= 0.0, "assign_owners: tensor ", i, " has cost ", cost[i],
             "; costs must be finite and non-negative");
  }
  std::vector<size_t> order(cost.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  Ownership o;
  o.owner.assign(cost.size(), 0);
  o.load.assign(static_cast<size_t>(world), 0.0);
  for (size_t i : order) {
    const auto lightest = std::min_element(o.load.begin(), o.load.end());  // first of equals
    *lightest += cost[i];
    o.owner[i] = static_cast<int>(lightest - o.load.begin());
  }
  return o;
}

}  // namespace sb
