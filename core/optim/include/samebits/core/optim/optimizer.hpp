// The optimizer interface the trainer calls: Muon (Keller Jordan 2024; Moonlight 2025 scaling)
// for 2-D hidden matrices with AdamW (Loshchilov & Hutter 2019) for the rest, or AdamW for all.
// Contract: an update is a pure function of (weights, gradient, state, step context) computed in
// the canonical orders (docs/CONTRACT.md) — identical bits on every backend, thread count and rank.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/config.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/core/optim_kernels.hpp"

namespace sb {

// What one step needs beyond weights and gradients; the trainer fills it from the schedule.
struct StepContext {
  int64_t step = 1;             // 1-based count of applied updates (AdamW bias correction)
  double lr_factor = 1.0;       // schedule multiplier on every group's peak lr (optim/schedule.hpp)
  double muon_momentum = 0.95;  // μ of this step (momentum warmup may lower it)
  bool compute_stats = true;    // fill last_stats()
};

// One buffer of optimizer state that a checkpoint saves and restores (backend memory).
struct StateBuffer {
  std::string name;  // "<tensor name>/<kind>", e.g. "h.0.attn.qkv.w/momentum", "wte/exp_avg_sq"
  float* data;       // (numel)
  size_t numel;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Updates every owned tensor of the flat weights (flat_size) in place from the flat batch
  // gradient (flat_size, already clipped). Both in backend memory, aligned with the layout.
  virtual void step(float* weights, const float* grads, const StepContext& ctx) = 0;
  // Every state buffer in a fixed order (only owned tensors hold state).
  virtual std::vector<StateBuffer> state() = 0;
  virtual size_t state_bytes() const = 0;
  virtual const std::vector<TensorUpdateStats>& last_stats() const = 0;
  // Distributed optimizer (ZeRO-1 style): only tensors with owned[i] are updated and hold state;
  // the others are left untouched (their owners broadcast them). Default: every tensor owned.
  virtual void set_owned(const std::vector<bool>& owned) = 0;
  // Relative cost of updating each tensor (Newton–Schulz flops for Muon matrices, numel for
  // AdamW tensors), for balancing ownership across ranks.
  virtual std::vector<double> update_cost() const = 0;
};

// Muon for ParamKind::matrix tensors and AdamW for the rest when config.name == muon; AdamW for
// everything when adamw. Matrix products of Newton–Schulz run on `backend` in `precision`.
std::unique_ptr<Optimizer> make_optimizer(const OptimConfig& config, const std::vector<ParamView>& params,
                                          Backend& backend, Precision precision);

// What an optimizer needs of the tensors it updates: its registration row (optimizer.cpp). Layouts
// (tensor parallelism's TpOptimizer) and the trainer ask it instead of naming optimizers.
struct OptimizerNeeds {
  // Its ParamKind::matrix update reads the whole matrix (Newton–Schulz): a tensor-parallel shard is
  // gathered first. Otherwise every update is elementwise and runs on shards as they are.
  bool whole_matrices = false;
  // The non-matrix tensors form a group of their own with optim.adam_lr (Muon's AdamW group);
  // otherwise every tensor uses optim.lr.
  bool adamw_group = false;
};
const OptimizerNeeds& optimizer_needs(OptimizerName name);
// Whether p's update needs the whole tensor (a matrix of an optimizer with whole_matrices).
bool needs_whole_tensor(const OptimConfig& config, const ParamView& p);
// The peak learning rate of the AdamW-updated tensors: optim.adam_lr in a group of their own, else optim.lr.
double adamw_peak_lr(const OptimConfig& config);
// The name of the update of tensor p in traces: optim.name for a whole matrix, else "adamw".
std::string_view update_name(const OptimConfig& config, const ParamView& p);

// make_optimizer(config, params, …)->update_cost() without building it (no state allocated): a
// pure function of the config and the shapes. The distributed optimizer under tensor parallelism
// balances by it on the full tensors, so every TP rank computes the same ownership.
std::vector<double> update_cost(const OptimConfig& config, const std::vector<ParamView>& params);

}  // namespace sb
