// A DP × TP layout (docs/DISTRIBUTED.md §10): world rank w is TP rank w % tp of the tensor-parallel
// group of ranks [w − w % tp, … + tp) (Megatron's consecutive groups) and DP rank w / tp of the
// data-parallel group of the ranks with the same TP rank. The model passes its partial chains
// through `group()`; the gradient is summed exactly across `dp()` only; what the run records about
// a tensor (fingerprints, exact statistics, the clip's ‖G‖², checkpoints) is of the full tensor,
// assembled from the shards, so it is the one-process value bit for bit. Host memory (CPU ranks).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/model/tp_group.hpp"
#include "samebits/core/model/tp_layout.hpp"
#include "samebits/core/parallel/communicator.hpp"
#include "samebits/core/parallel/owner_gradient.hpp"

namespace sb {

class TensorParallel {
 public:
  // Collective over world (two splits). Throws sb::Error naming parallel.tp when the world size is
  // not a multiple of tp, or the backend is not the CPU's. On pipeline stage `stage` of `stages`
  // (world: the stage's ranks) the layout is the stage's tensors (gpt_tp_layout); of expert shard
  // `shard`'s tensors under expert parallelism.
  TensorParallel(Communicator& world, int tp, const GPTConfig& model, Backend& backend, int stages = 1, int stage = 0,
                 ExpertShard shard = {});
  ~TensorParallel();

  TpGroup& group();                    // the model's view of the TP group
  Communicator& dp() { return *dp_; }  // this rank's data-parallel group
  Communicator& tp() { return *tp_; }  // this rank's tensor-parallel group
  const TpLayout& layout() const { return layout_; }
  int tp_rank() const { return tp_->rank(); }

  // full (numel of tensor t) ← the whole tensor t, from every rank's shard of it (local_flat:
  // this rank's flat buffer). Collective over the TP group for a sharded tensor.
  void gather(size_t t, const float* local_flat, float* full);
  // The same for a shard of tensor t alone (shard: its local numel).
  void gather_shard(size_t t, const float* shard, float* full);
  // Per-tensor det::fingerprint of the full tensors (every TP rank gets the same values).
  std::vector<uint64_t> fingerprints(const float* local_flat);
  // The length of the full flat buffer (gpt_param_layout offsets, zero gaps) / this rank's flat
  // from one.
  size_t full_flat_size() const;
  void take_local(const float* full_flat, float* local_flat) const;
  // What OwnerGradient::share gives: fingerprints, per-tensor exact sums and Σ g² of the full
  // gradient, from this rank's shards (replicated tensors counted once). Collective over TP.
  SharedGradient share(const float* grad, bool fingerprints, bool statistics);
  // Zero the `per` words of each replicated tensor unless this is TP rank 0 (before a SUM across
  // the TP group counts each replicated tensor once). words: (tensors, per).
  void mask_replicated(int64_t* words, size_t per) const;

 private:
  class Group;
  std::unique_ptr<Communicator> tp_, dp_;
  std::unique_ptr<Group> group_;
  TpLayout layout_;
  std::unique_ptr<TensorSums> sums_;  // over the local layout
};

}  // namespace sb
