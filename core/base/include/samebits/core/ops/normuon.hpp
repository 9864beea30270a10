// NorMuon's per-row formulas (Li et al. 2025, "NorMuon: Making Muon more efficient and
// scalable", arXiv:2510.05491; modded-nanogpt's NorMuonAndAdam), host and device, one definition.
// Per row i of the Newton–Schulz output X (rows, cols) with S_i = Σ_j X_ij² (exact):
//   mean_i = fl32(fl64(S_i) / cols);  v_i ← fma(β2, v_i, fl32(mean_i·(1 − β2)))   (state, fp32)
//   r_i = fl32(1 / fl32(√max(v_i, 1e-10)))
// The whole-matrix factor that keeps ‖X‖_F (modded-nanogpt's rule) is formed on the host in fp64
// from exact sums (optim/normuon.hpp); every other rounding is spelled out here.
#pragma once
#include "samebits/det/hd.hpp"

namespace sb::ops {

// The floor under v before the reciprocal square root (modded-nanogpt's clamp_min(1e-10)).
constexpr float kNorMuonFloor = 1e-10f;

// mean_i = fl32(fl64(S_i) / cols): row_sq is S_i rounded once to fp64.
SB_HD float normuon_row_mean(double row_sq, double cols) { return static_cast<float>(row_sq / cols); }

// v ← fma(β2, v, fl32(mean·(1 − β2))), AdamW's second-moment order.
SB_HD float normuon_second_moment(float v, float mean, float beta2, float one_minus_beta2) {
  return det::fma_f32(beta2, v, mean * one_minus_beta2);
}

// r = fl32(1 / fl32(√max(v, 1e-10))) (IEEE √ and ÷; a NaN v stays NaN).
SB_HD float normuon_inv_rms(float v) { return 1.0f / det::sqrt_f32(v < kNorMuonFloor ? kNorMuonFloor : v); }

}  // namespace sb::ops
