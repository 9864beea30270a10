// Internal (plan_pipeline.cpp, plan_expert.cpp): a plan whose tensors are partitioned over the
// ranks of a `parts` communicator — pipeline stages, or the shards of expert parallelism — each
// part running an inner plan (DP or DP × TP) over the tensors it holds, on its own ranks. What the
// run records is of the whole model: each tensor's fingerprints, statistics and update statistics
// come from the first part that holds it (its owner), moved over `parts` as bits, and so do its
// weights and optimizer state for a checkpoint, to world rank 0 alone. A tensor held by several
// parts is counted by its owner only. Nothing here rounds a float.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "samebits/core/parallel/parallel_plan.hpp"

namespace sb {

class PartitionedPlan : public ParallelPlan {
 public:
  // The communicator of the parts (ranked by part) and this part's ranks, split in that order.
  struct Comms {
    std::unique_ptr<Communicator> parts, part_world;
  };

  Communicator& world() override { return world_; }
  TpGroup* tensor_group() override { return inner_->tensor_group(); }
  const std::vector<ParamView>& local_layout() const override { return inner_->local_layout(); }
  const std::vector<ParamView>& full_layout() const override { return full_; }
  // The inner plan's optimizer, whose update statistics are the whole model's (from the owners).
  std::unique_ptr<Optimizer> make_optimizer(const Config& config, bool distributed) override;
  // words: the loss, then `per` words per tensor of the whole model. The inner plan sums its
  // tensors' words over its ranks (each value once), `parts` adds the parts' (leaf sums: every
  // part's leaves).
  void sum_scalars(int64_t* words, size_t n, size_t loss_words, size_t per) override;
  // The inner plan's sums of its tensors, those it does not own left out (zeroed for the call),
  // then each tensor's from its owner; Σ g² added over `parts`.
  SharedGradient share_gradient(float* grad, bool fingerprints, bool statistics) override;
  void scale_gradient(float* grad, float factor) override { inner_->scale_gradient(grad, factor); }
  std::vector<uint64_t> fingerprints(const float* local_flat) override;
  // The model's flat buffer on world rank 0: each part's inner plan gathers its full tensors on its
  // first rank (world rank 0's group of parts), which sends world rank 0 those it owns, in model order.
  void full_flat(const float* local_flat, std::vector<float>& out) override;
  // From world rank 0's full buffer: it sends each part's first rank the tensors the part holds,
  // in model order, and the inner plan passes them on to its ranks.
  void take_local(const std::vector<float>& full, float* local_flat) override;
  // On world rank 0: each part's arrays of the tensors it owns, sent by the part's first rank, in
  // the model's tensor order (the one-process optimizer's: per tensor, its kinds).
  void full_state(std::vector<StateArray>& out) override;
  // Each inner plan gathers its full tensors and arrays on its first rank, which answers world
  // rank 0's fetches of those it owns (stage_parts.hpp).
  void full_parts(const float* local_flat, const std::function<void(const StateParts&)>& use) override;
  // From world rank 0's arrays: it sends each part's first rank the arrays of the tensors the part
  // holds, and the inner plan passes them on (and checks each).
  void load_state(const std::vector<StateArray>& full) override;

 protected:
  // world: this plan's ranks; full: the whole model's tensors (of this pipeline stage); comms: the
  // parts' and this part's communicators, inner: the plan over this part's ranks; holds(p, name):
  // whether part p holds a tensor.
  PartitionedPlan(Communicator& world, Backend& backend, std::vector<ParamView> full, Comms comms,
                  const std::function<std::unique_ptr<ParallelPlan>(Communicator&)>& inner,
                  const std::function<bool(int, const std::string&)>& holds);
  // The traffic of the inner plan, world, parts and the `more` groups.
  CommCounters traffic_with(std::initializer_list<Communicator*> more);
  Communicator& parts() { return *parts_; }
  ParallelPlan& inner() { return *inner_; }
  const ParallelPlan& inner() const { return *inner_; }
  int part() const { return part_; }
  int part_count() const { return part_count_; }

 private:
  // Per part tensor `per` words → per model tensor, from its owner.
  std::vector<uint64_t> gather(const std::vector<uint64_t>& local, size_t per);
  // The index in the part's tensors of model tensor t (one the part holds).
  size_t local_of(size_t t) const;
  // The model tensor of a state buffer "<tensor>/<kind>".
  size_t tensor_of(const std::string& buffer) const;

  Communicator& world_;
  Backend& backend_;
  std::vector<ParamView> full_;
  std::unique_ptr<Communicator> parts_, part_world_;
  std::unique_ptr<ParallelPlan> inner_;  // over part_world_
  int part_ = 0, part_count_ = 1;
  // The inner plan's per-tensor values (fingerprints, statistics, update statistics, the scalars'
  // words) are of its full_layout()'s tensors: each one's index in full_, and whether this part owns it.
  std::vector<size_t> slot_;
  std::vector<bool> counted_;
  std::vector<int> owner_;                  // (model tensors) the first part that holds each
  std::vector<std::vector<size_t>> holds_;  // [part] the model tensors it holds, in model order
};

}  // namespace sb
