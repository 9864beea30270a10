// The tensor-parallel group as Newton–Schulz's group of shards (optim/ns_group.hpp; optim.tp_mode
// = distributed | distributed_exact, docs/DISTRIBUTED.md §10). Exact sums are integer all-reduces
// of ExactSum words. The Gram matrices: `distributed` adds the ranks' fp32 partials with the
// communicator's float SUM (allreduce_sum_f32: MPI's order, so beyond two ranks the bits may
// depend on the MPI library and algorithm); `distributed_exact` adds them exactly (the exact
// all-reduce of a GradAccumulator, rounded once to fp32): the same bits for any rank order or MPI
// algorithm. Neither is the one-process Gram: each partial is a chain over its rank's columns only.
#pragma once
#include <map>
#include <memory>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/model/tp_layout.hpp"
#include "samebits/core/optim/muon.hpp"
#include "samebits/core/parallel/communicator.hpp"
#include "samebits/core/parallel/tensor_parallel.hpp"

namespace sb {

class TpNsGroup final : public NsGroup {
 public:
  // tp: the group's communicator (outlives this). exact: distributed_exact's Gram sum.
  TpNsGroup(Communicator& tp, Backend& backend, bool exact);
  ~TpNsGroup() override;
  int size() const override { return comm_.size(); }
  det::ExactSum sum_exact(const det::ExactSum& s) override;
  void sum_gram(float* a, size_t n) override;

 private:
  Communicator& comm_;
  Backend& backend_;
  bool exact_;
  std::map<size_t, std::unique_ptr<GradAccumulator>> sums_;  // exact: one per Gram size
};

// One MatrixShard per tensor of layout (layout order): every sharded matrix a row shard (Y = Xᵀ:
// attn.qkv.w, mlp.fc.w) or a column shard (Y = X: attn.proj.w, mlp.proj.w) of its full shape over
// group; replicated tensors whole.
std::vector<MatrixShard> tp_matrix_shards(const TpLayout& layout, const std::shared_ptr<NsGroup>& group);

// True for the modes that run Newton–Schulz over the TP group's shards.
inline bool ns_over_shards(TpMode m) { return m == TpMode::distributed || m == TpMode::distributed_exact; }

// The optimizer of a TP rank under distributed / distributed_exact: Muon over the local layout
// with every sharded matrix's Newton–Schulz over the TP group (AdamW, elementwise: the local one).
std::unique_ptr<Optimizer> make_tp_shard_optimizer(const OptimConfig& config, TensorParallel& tp, Backend& backend,
                                                   Precision precision);

}  // namespace sb
