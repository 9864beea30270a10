// What one training step reports, as plain data: its statistics (the run file's /series), the
// per-tensor batch-gradient sums they are made of, and the step's outcome with its traffic.
// Contract: every value is rounded once from an exact sum (rule 5), so it has the same bits on
// every configuration; the trainer fills them (train/statistics.hpp), the run store records them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/comm_counters.hpp"
#include "samebits/det/exact_sum.hpp"

namespace sb {

// One tensor's statistics for one step (NaN where not defined, e.g. everything but the leaf sums
// on a skipped fp16 step, or ortho_error on AdamW tensors).
struct TensorStats {
  float grad_norm = 0;   // ‖G_t‖₂ of the batch gradient (before clipping)
  float grad_max = 0;    // max |G_t[i]|
  float grad_mean = 0;   // Σ G_t[i] / numel
  float update_rms = 0;  // from the optimizer (Optimizer::last_stats)
  float update_weight_ratio = 0;
  float ortho_error = 0;
  float leaf_sq_mean = 0;  // |G_small|² = Σ_l ‖g_l,t‖² / leaves
  float batch_sq = 0;      // |G_big|² = ‖G_t‖²
  float grad_sq_est = 0;   // |G|² estimate
  float trace_est = 0;     // tr(Σ) estimate
  float noise_scale = 0;   // B_simple
};

// Everything a step reports. Scalars are the same on every rank.
struct StepStats {
  int64_t step = 0;          // steps done, this one included (1 after the first step)
  float loss = 0;            // exact mean of the per-token losses over the step's leaves
  float val_loss = 0;        // validation loss after this step, NaN when not evaluated
  double lr_factor = 0;      // the schedule's multiplier
  double lr = 0;             // Muon group lr (every tensor's under adamw) = optim.lr × lr_factor
  double adam_lr = 0;        // AdamW group lr (optim.adam_lr, or optim.lr under adamw) × lr_factor
  double muon_momentum = 0;  // μ of this step
  float grad_norm = 0;       // global ‖G‖₂ before clipping (NaN on a skipped step)
  float clip_scale = 1;      // the factor clipping multiplied G by (1: not clipped)
  float loss_scale = 1;      // the fp16 loss scale this step used (1 in fp32/bf16)
  bool skipped = false;      // fp16 overflow: gradients not finite, no update, scale backed off
  int64_t tokens = 0;        // tokens trained on in this step
  int64_t tokens_seen = 0;   // tokens of every step so far, this one included
  // Whole-model leaf variance (sums over tensors), as in TensorStats.
  float leaf_sq_mean = 0, batch_sq = 0, grad_sq_est = 0, trace_est = 0, noise_scale = 0;
  std::vector<TensorStats> tensors;  // layout order; empty when statistics are off
  // optim.qk_clip > 0: the step's largest attention logit per head, layer-major (n_layer ×
  // n_head), and how many heads the clip rescaled (0 on a skipped fp16 step, whose maxima are
  // still reported); empty and 0 otherwise (optim/qk_clip.hpp). The run file records both
  // (series/qk_max_logit, series/qk_clipped; docs/FORMAT.md).
  std::vector<float> qk_max_logits;
  int qk_clipped = 0;
  // model.moe_experts > 0, over the step's leaves on every rank, the MoE blocks in layer order:
  // each routed expert's selections (block-major, blocks × experts), and per block the mean of the
  // leaves' load-balancing losses (with the coefficient) and the mean router entropy of the tokens
  // (both rounded once from exact sums), the route flips (the step's tokens whose expert set under
  // the updated router differs from the one they were trained with; −1 when statistics are off)
  // and each routed expert's auxiliary-loss-free bias after the step (block-major; zeros when
  // model.moe_bias_rate = 0); empty otherwise (series/moe_*, docs/FORMAT.md).
  std::vector<int64_t> moe_tokens, moe_route_flips;
  std::vector<double> moe_aux_loss, moe_entropy;
  std::vector<float> moe_bias;
};

// One tensor's batch-gradient sums, each rounded once from its exact sum: what the per-tensor
// statistics are made of (optim/clip.hpp grad_stats' values and ‖G_t‖² in fp64). A rank that holds
// only some tensors' gradients computes theirs and shares them (parallel/owner_gradient.hpp).
struct TensorBatchSums {
  float norm = 0;     // sqrt_rounded(Σ g²)
  float max_abs = 0;  // max |g| (NaN when any g is NaN)
  float mean = 0;     // fl32(fl64(Σ g) / numel)
  double sq = 0;      // fl64(Σ g²)
};
TensorBatchSums batch_sums(const det::ExactSum& squares, const det::ExactSum& sum, float max_abs, size_t numel);

// One step's outcome, for the run store and the CLI.
struct StepResult {
  StepStats stats;
  std::vector<uint64_t> param_fingerprints;  // (tensors) det::fingerprint of each tensor after
                                             // the update, layout order; empty when off
  std::vector<uint64_t> grad_fingerprints;   // (tensors) of the batch gradient (unscaled, before
                                             // clipping); 0 on a skipped step; empty when off
  CommCounters comm;                         // this step's traffic on this rank
  HostTraffic host;                          // this step's host ↔ backend bytes on this rank
  double seconds = 0;                        // wall time of the step (not part of the bits)
};

}  // namespace sb
