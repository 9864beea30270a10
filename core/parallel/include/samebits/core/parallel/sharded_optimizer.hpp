// The distributed optimizer (ZeRO-1 style, docs/DISTRIBUTED.md): each rank owns whole
// tensors (parallel/ownership.hpp), keeps optimizer state only for them, runs their update (Muon's
// Newton–Schulz, AdamW), and then every owner broadcasts its tensors' new weights and update
// statistics. Contract: bitwise identical to one process running the unsharded optimizer — an
// update is a pure function of (weights, gradient, state, context) and the broadcasts copy bits.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/core/optim/optimizer.hpp"
#include "samebits/core/parallel/communicator.hpp"
#include "samebits/core/parallel/ownership.hpp"
#include "samebits/core/train_state.hpp"

namespace sb {

class ShardedOptimizer final : public Optimizer {
 public:
  // Wraps a freshly made optimizer over `params` (every tensor owned): assigns the owners from
  // `cost` (one per tensor: inner->update_cost(), or update_cost(config, full layout) under tensor
  // parallelism, the same on every TP rank) over comm.size() ranks and frees the state of the
  // others' tensors. backend and comm must outlive it.
  ShardedOptimizer(std::unique_ptr<Optimizer> inner, std::vector<ParamView> params, const std::vector<double>& cost,
                   Backend& backend, Communicator& comm);

  // Collective. Updates this rank's tensors, then owner r (r = 0 … world−1) broadcasts its
  // tensors' weights (and, with ctx.compute_stats, their TensorUpdateStats): one broadcast per
  // rank, Σ numel·4 (+ 12 per tensor) bytes in all. weights, grads: (flat_size) backend memory.
  void step(float* weights, const float* grads, const StepContext& ctx) override;
  std::vector<StateBuffer> state() override;                          // this rank's tensors only
  size_t state_bytes() const override;                                // this rank's
  const std::vector<TensorUpdateStats>& last_stats() const override;  // every tensor's
  // Throws sb::Error: the ownership is fixed by (layout, world size).
  void set_owned(const std::vector<bool>& owned) override;
  std::vector<double> update_cost() const override;  // the costs it balanced

  // Collective. Every tensor's state buffers, host copies, in the unsharded optimizer's
  // state() order (what a one-process run checkpoints), on rank 0: each owner sends it its own;
  // the other ranks get none and hold only their own tensors' copies for the duration.
  std::vector<StateArray> gather_state();
  // Collective. Copies this rank's buffers out of `full` (every tensor's arrays, as
  // gather_state returns them) by name. Throws sb::Error when one is missing or has another
  // size, or when the ranks together hold a different number of buffers than `full`.
  void scatter_state(const std::vector<StateArray>& full);

  const Ownership& ownership() const { return ownership_; }

 private:
  std::unique_ptr<Optimizer> inner_;
  std::vector<ParamView> params_;
  Backend& backend_;
  Communicator& comm_;
  std::vector<double> cost_;  // (tensors) what the ownership balances
  Ownership ownership_;
  std::vector<std::vector<size_t>> owned_;  // [rank] the tensors it owns, layout order
  std::vector<TensorUpdateStats> stats_;    // (tensors)
  std::vector<unsigned char> staging_;      // one owner's update statistics (host)
};

// Collective: the optimizer-state bytes of every rank (an all-gather of state_bytes()).
std::vector<uint64_t> state_bytes_per_rank(const Optimizer& optimizer, Communicator& comm);

}  // namespace sb
