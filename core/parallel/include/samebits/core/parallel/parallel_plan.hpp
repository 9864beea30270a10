// A parallel layout as the trainer sees it (docs/ARCHITECTURE.md "Parallel layouts"): a mesh of
// named axes — tp, ep, dp, pp in Megatron's rank order (tp fastest, then dp — whose consecutive
// ranks form the expert-parallel groups — then pp) — and the
// operations a step needs from it. Contract: an implementation moves bits and adds integers; it
// never rounds a float, so every layout's run is the one-process run bit for bit
// (docs/DISTRIBUTED.md §10, §11). Implementations: data parallelism (parallel_plan.cpp), DP × TP
// (plan_tensor.cpp), expert parallelism inside DP (plan_expert.cpp), pipeline stages of any of
// them, each over its own tensors (plan_pipeline.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/config.hpp"
#include "samebits/core/model/expert_group.hpp"
#include "samebits/core/model/tp_group.hpp"
#include "samebits/core/optim/optimizer.hpp"
#include "samebits/core/parallel/communicator.hpp"
#include "samebits/core/parallel/owner_gradient.hpp"
#include "samebits/core/pipe_group.hpp"
#include "samebits/core/train_state.hpp"

namespace sb {

struct MeshAxis {
  std::string name;  // "tp", "ep", "dp", "pp"
  int size = 1;
  int rank = 0;  // this rank's coordinate on the axis
};

class ParallelPlan {
 public:
  virtual ~ParallelPlan() = default;

  // The axes, fastest-varying first; world rank = tp + TP·(dp + DP·pp).
  virtual std::vector<MeshAxis> mesh() const = 0;

  // ---- the groups ----
  // Every rank: the step's scalars (loss, statistics), the fp16 skip decision, QK-clip's maxima.
  virtual Communicator& world() = 0;
  // The ranks that split a step's leaves and the validation set: the data-parallel group.
  virtual Communicator& leaf_group() = 0;
  // The ranks that hold the same tensors (DP × PP): the gradient is summed exactly over them, the
  // distributed optimizer shards them and the replica check compares them.
  virtual Communicator& replica_group() = 0;
  // What the model is given: its tensor-parallel group and its pipeline group (null: none).
  virtual TpGroup* tensor_group() { return nullptr; }
  virtual PipeGroup* pipe_group() { return nullptr; }
  // The model's expert-parallel group (null: none).
  virtual ExpertGroup* expert_group() { return nullptr; }

  // ---- how tensors split ----
  // This rank's tensors (the model's params(): shards under TP, a stage's tensors under PP) and the
  // whole model's, in layout order.
  virtual const std::vector<ParamView>& local_layout() const = 0;
  virtual const std::vector<ParamView>& full_layout() const = 0;
  // The optimizer of this layout over the local tensors, wrapped in the distributed optimizer
  // across the replica group when `distributed`. The plan keeps a reference (full_state below).
  virtual std::unique_ptr<Optimizer> make_optimizer(const Config& config, bool distributed) = 0;

  // ---- the step ----
  // words (n) summed exactly over the world with every value counted once: loss_words of loss,
  // then per local tensor `per` words of statistics (per = 0: none).
  virtual void sum_scalars(int64_t* words, size_t n, size_t loss_words, size_t per) = 0;
  // The accumulator's exact sums over the replica group (to the owners only, under the
  // distributed optimizer with the exact all-reduce). adds: the group's total add count.
  virtual void reduce_gradient(GradAccumulator& acc, uint64_t adds, uint32_t status) = 0;
  // Fingerprints, per-tensor sums and Σ g² of the full tensors of the rounded gradient grad
  // (local flat, backend memory). Collective.
  virtual SharedGradient share_gradient(float* grad, bool fingerprints, bool statistics) = 0;
  // grad ← fl(grad · factor) where this rank's update reads it (the clip's multiply).
  virtual void scale_gradient(float* grad, float factor) = 0;

  // ---- full tensors (fingerprints, checkpoints: the same whatever the layout) ----
  virtual std::vector<uint64_t> fingerprints(const float* local_flat) = 0;  // (full tensors)
  // Collective. On rank 0 of world(), the rank that writes checkpoints: out ← the full flat buffer
  // (gpt_param_layout offsets, zero gaps; out's storage reused where it fits); the other ranks
  // send their parts and get out empty, so under pipeline stages no rank but rank 0 holds more
  // than its stage's tensors. take_local: this rank's flat from rank 0's full one (the other
  // ranks' `full_flat` is ignored), its count checked on every rank.
  virtual void full_flat(const float* local_flat, std::vector<float>& out) = 0;
  virtual void take_local(const std::vector<float>& full_flat, float* local_flat) = 0;
  // Collective. On rank 0 of world(): out ← the optimizer state as the one-process optimizer's
  // arrays (out's vectors reused where they fit); empty on the other ranks. load_state: this
  // rank's part of rank 0's such arrays (the others' `full` is ignored), each checked against its
  // tensor's full size.
  virtual void full_state(std::vector<StateArray>& out) = 0;
  virtual void load_state(const std::vector<StateArray>& full) = 0;
  // Collective. The same weights and arrays as parts read one at a time: `use` runs on rank 0 of
  // world() and the ranks holding the tensors answer its fetches until it returns (or throws).
  // Here: over full_flat and full_state's copies. Pipeline stages: rank 0 holds its stage's tensors
  // and one other array at a time, never the whole model.
  virtual void full_parts(const float* local_flat, const std::function<void(const StateParts&)>& use);

  // What this rank's groups put on the wire since they were made, added.
  virtual CommCounters traffic() = 0;
};

// The plan of config.parallel over `world` (collective over it; world and backend must outlive
// it). Throws sb::Error naming parallel.tp, parallel.ep or parallel.pp when the layout divides
// neither the world nor the model, or does not run on this backend.
std::unique_ptr<ParallelPlan> make_parallel_plan(const Config& config, Communicator& world, Backend& backend);

// The index in plan.full_layout() of each tensor of plan.local_layout() (by name).
std::vector<size_t> full_indices(const ParallelPlan& plan);
// The length of a flat buffer of `layout` (each tensor's end rounded up to kParamAlign).
size_t layout_flat_size(const std::vector<ParamView>& layout);
// out ← the optimizer state of `opt` (its state() buffers, host copies; out's vectors reused).
void copy_state(Optimizer& opt, Backend& backend, std::vector<StateArray>& out);
// opt's buffers ← arrays, checked by name and size first.
void load_state_checked(Optimizer& opt, Backend& backend, const std::vector<StateArray>& arrays);

}  // namespace sb
