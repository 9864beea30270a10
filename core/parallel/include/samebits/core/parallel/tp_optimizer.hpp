// The optimizer of a tensor-parallel rank (docs/DISTRIBUTED.md §10), every optim.tp_mode:
// replicated tensors are updated where they are (every TP rank alike), and so are the shards of
// tensors whose update is elementwise (AdamW's), with their update statistics summed exactly over
// the group (the whole tensor's). The sharded Muon matrices: under duplicated each one's weights,
// gradient and state shards are gathered into one full matrix, updated by the one-process
// optimizer of that matrix alone (Newton–Schulz on the full momentum matrix), and each rank keeps
// its shard — every update the one-process update bit for bit; at rest a rank holds 1/tp of every
// sharded tensor's state, plus one full matrix of each sharded kind as scratch. Under blockwise
// each shard is a matrix of its own, under distributed / distributed_exact Newton–Schulz runs over
// the group's shards (tp_ns_group.hpp): other numerics, on purpose.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "samebits/core/optim/optimizer.hpp"
#include "samebits/core/parallel/tensor_parallel.hpp"

namespace sb {

class TpOptimizer final : public Optimizer {
 public:
  TpOptimizer(const OptimConfig& config, TensorParallel& tp, Backend& backend, Precision precision);
  ~TpOptimizer() override;
  void step(float* weights, const float* grads, const StepContext& ctx) override;
  // Layout order, the one-process names; sharded tensors' buffers hold this rank's shard.
  std::vector<StateBuffer> state() override;
  size_t state_bytes() const override;  // this rank's state (shards and replicated tensors)
  size_t scratch_bytes() const;         // the full matrices of the duplicated update
  const std::vector<TensorUpdateStats>& last_stats() const override { return stats_; }
  // The distributed optimizer across the DP group (docs/DISTRIBUTED.md §10): only owned tensors,
  // replicated or sharded, are updated and keep state (shards), the same flags on every TP rank
  // of the group (a sharded tensor's gathers are collective over it). Default: every tensor.
  void set_owned(const std::vector<bool>& owned) override;
  // The full tensors' costs (update_cost(config, full layout)): the same on every TP rank.
  std::vector<double> update_cost() const override;

 private:
  struct Scratch;  // one full tensor's optimizer, weights and gradient (tp_optimizer.cpp)
  Scratch& scratch_for(size_t t);

  OptimConfig config_;
  TensorParallel& tp_;
  Backend& backend_;
  Precision precision_;
  std::unique_ptr<Optimizer> inner_;                         // local layout, replicated tensors owned
  std::vector<bool> gathered_;                               // [tensor] updated whole (a sharded Muon matrix)
  std::vector<bool> owned_;                                  // (tensors) set_owned's flags
  std::vector<std::vector<Tensor>> shards_;                  // [tensor][kind] this rank's state shard (owned)
  std::vector<std::vector<std::string>> kinds_;              // [tensor] state kinds of a sharded tensor
  std::map<std::string, std::unique_ptr<Scratch>> scratch_;  // by kind of tensor and shape
  std::vector<TensorUpdateStats> stats_;
  std::vector<std::vector<float>> before_;  // the elementwise shards before a step (statistics)
};

}  // namespace sb
