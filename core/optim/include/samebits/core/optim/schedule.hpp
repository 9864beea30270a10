// Learning-rate schedules (constant, warmup + cosine, warmup-stable-decay) and Muon's momentum
// warmup. Contract: pure functions of (config, step) in fp64 with + − × ÷ and samebits' cos_2pi
// only (no libm), so every configuration gets the same doubles. Formulas: docs/OPTIM.md §3.
#pragma once
#include <cstdint>

#include "samebits/core/config.hpp"

namespace sb {

// The multiplier on every group's peak learning rate for update `step` (1-based: the first
// update is step 1; StepContext::lr_factor). With W = train.warmup, S = train.steps,
// m = train.min_lr_ratio, s = min(step, S):
//   s ≤ W:      s / W                                        (every schedule; 1/W at step 1)
//   constant:   1
//   cosine and adaptive (which the trainer then multiplies by ρ, optim/adaptive_lr.hpp):
//               p = (s − W)/(S − W);  m + (1 − m)·0.5·(1 + cos(πp)),
//               cos(πp) = fl64(det::cos_2pi(fl32(p·0.5)))     (m at s = S)
//   wsd:        D = max(1, ⌊decay_fraction·S⌋) decay steps, E = max(W, S − D) the end of the
//               stable phase: 1 while s ≤ E, then 1 − (1 − m)·(s − E)/(S − E)   (m at s = S)
// Each "·", "/", "+" and "−" above is one fp64 operation, left to right.
double lr_factor(const TrainConfig& train, int64_t step);

// The learning rate of a group with peak `peak_lr` at this factor: fl64(peak_lr · factor). The
// optimizers derive their fp32 constants from it (docs/OPTIM.md).
inline double scheduled_lr(double peak_lr, double factor) { return peak_lr * factor; }

// Muon's μ for update `step` (1-based; StepContext::muon_momentum): optim.momentum, or with
// K = optim.momentum_warmup > 0 a linear ramp from optim.momentum_warmup_start over the first K
// updates (modded-nanogpt's warmup):
//   f = min(1, (step − 1)/K);  μ = μ0 + (μ1 − μ0)·f      (fp64, μ0 at step 1, μ1 from step K + 1)
double muon_momentum(const OptimConfig& optim, int64_t step);

}  // namespace sb
