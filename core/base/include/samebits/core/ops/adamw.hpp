// AdamW's elementwise update (Loshchilov & Hutter 2019; torch.optim.AdamW's order of operations),
// host and device, one definition. Every rounding is spelled out; the fp32 constants are derived
// on the host in fp64 and rounded once (adamw_constants in optim/adamw.hpp, docs/OPTIM.md §2).
#pragma once
#include "samebits/det/hd.hpp"

namespace sb::ops {

struct AdamWConstants {
  float beta1, one_minus_beta1;  // fl32(β1), fl32(1 − β1)
  float beta2, one_minus_beta2;  // fl32(β2), fl32(1 − β2)
  float eps;                     // fl32(ε)
  float step_size;               // fl32(lr / (1 − β1^t))
  float bc2_sqrt;                // fl32(√(1 − β2^t))
  float decay;                   // fl32(1 − lr·wd); exactly 1 without weight decay
};

// One element, in this order:
//   m ← fma(β1, m, fl(g·(1−β1)))            first moment
//   v ← fma(β2, v, fl(fl(g·g)·(1−β2)))       second moment
//   d ← fl(fl(√v) / √(1−β2^t)) + ε           denominator (IEEE √ and ÷)
//   w ← fma(−step_size, fl(m/d), fl(w·decay))
SB_HD void adamw_update(float* w, float* m, float* v, float g, const AdamWConstants& k) {
  const float m1 = det::fma_f32(k.beta1, *m, g * k.one_minus_beta1);
  const float v1 = det::fma_f32(k.beta2, *v, (g * g) * k.one_minus_beta2);
  const float denom = det::sqrt_f32(v1) / k.bc2_sqrt + k.eps;
  *w = det::fma_f32(-k.step_size, m1 / denom, *w * k.decay);
  *m = m1;
  *v = v1;
}

}  // namespace sb::ops
