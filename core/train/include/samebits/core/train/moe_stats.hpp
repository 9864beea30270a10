// A step's Mixture-of-Experts statistics and state (StepStats::moe_*): every leaf's routing on
// every rank and pipeline stage, summed so that no layout can change a bit — selections and route
// flips as integers, the load-balancing losses and router entropies as exact sums, rounded once —
// and the auxiliary-loss-free biases (model.moe_bias_rate), which every rank moves alike from the
// step's summed selections.
#pragma once
#include <cstdint>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/core/parallel/communicator.hpp"
#include "samebits/core/step_stats.hpp"
#include "samebits/det/exact_sum.hpp"

namespace sb {

class MoeStepStats {
 public:
  // flips: count route flips, keeping each leaf's block inputs on the host until the step ends
  // (leaf_size·seq_len·n_embd floats per leaf and MoE block). counted: this rank's leaves count
  // (false on a tensor-parallel rank other than 0, whose routing repeats rank 0's).
  MoeStepStats(const GPTConfig& cfg, Backend& backend, bool flips, bool counted);
  void clear();
  // The last forward's routing of every MoE block the model (a pipeline stage's) holds.
  void add_leaf(const GPT& model);
  // Summed over `world` (every rank gets the sums), into st: selections per expert, the mean
  // load-balancing loss over `leaves` leaves, the mean entropy over their `tokens`.
  void finish(Communicator& world, int64_t leaves, int64_t tokens, StepStats& st);
  // After the step's update (applied: false for a skipped fp16 step), collective over `world`: the
  // biases moved from st.moe_tokens (ops::moe_bias_update) and given to the model; the kept
  // leaves re-routed with the updated router and bias, the tokens whose set changed summed over
  // the world; into st.moe_bias and st.moe_route_flips (−1 each without flips or in a traced step).
  void after_update(GPT& model, Communicator& world, bool applied, StepStats& st);
  // The biases (MoE blocks × experts), e.g. for a checkpoint, and their restore (model too).
  const std::vector<float>& bias() const { return bias_; }
  void set_bias(GPT& model, const std::vector<float>& bias);

 private:
  void count_flips(GPT& model);

  GPTConfig cfg_;
  Backend& be_;
  bool flips_, counted_;
  std::vector<int> ordinal_;  // (n_layer) a block's index among the MoE blocks, −1 for a dense one
  int blocks_ = 0;
  std::vector<int64_t> counts_;         // (blocks, experts)
  std::vector<det::ExactSum> aux_;      // (blocks)
  std::vector<det::ExactSum> entropy_;  // (blocks)
  std::vector<float> bias_;             // (blocks, experts)
  std::vector<int64_t> flip_counts_;    // (blocks)
  // flips: a leaf's block input (N, C) and chosen experts (N, k), kept_[0, used_) this step (the
  // vectors stay allocated from step to step).
  struct Kept {
    int layer = 0;
    std::vector<float> x;
    std::vector<int32_t> chosen;
  };
  std::vector<Kept> kept_;
  size_t used_ = 0;
};

}  // namespace sb
