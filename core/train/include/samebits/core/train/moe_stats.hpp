// A step's Mixture-of-Experts statistics (StepStats::moe_*): every leaf's routing on every rank
// and pipeline stage, summed so that no layout can change a bit — selections as integers, the
// load-balancing losses and router entropies as exact sums — then rounded once.
#pragma once
#include <cstdint>
#include <vector>

#include "samebits/core/model/gpt.hpp"
#include "samebits/core/parallel/communicator.hpp"
#include "samebits/core/step_stats.hpp"
#include "samebits/det/exact_sum.hpp"

namespace sb {

class MoeStepStats {
 public:
  explicit MoeStepStats(const GPTConfig& cfg);
  void clear();
  // The last forward's routing of every MoE block the model (a pipeline stage's) holds.
  void add_leaf(const GPT& model);
  // Summed over `world` (every rank gets the sums), into st: selections per expert, the mean
  // load-balancing loss over `leaves` leaves, the mean entropy over their `tokens`.
  void finish(Communicator& world, int64_t leaves, int64_t tokens, StepStats& st);

 private:
  GPTConfig cfg_;
  std::vector<int> ordinal_;  // (n_layer) a block's index among the MoE blocks, −1 for a dense one
  int blocks_ = 0;
  std::vector<int64_t> counts_;         // (blocks, experts)
  std::vector<det::ExactSum> aux_;      // (blocks)
  std::vector<det::ExactSum> entropy_;  // (blocks)
};

}  // namespace sb
