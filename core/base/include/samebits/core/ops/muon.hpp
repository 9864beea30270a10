// Muon's elementwise formulas (Keller Jordan 2024), host and device, one definition. Each
// rounding is spelled out: fma_f32 where one rounding is meant, plain fp32 operations elsewhere.
// The fp32 constants (mu, denom, a, b, c, decay, step) are derived on the host in fp64 and
// rounded once (docs/OPTIM.md §1); the matrix products are canonical GEMMs (rule 1).
#pragma once
#include "samebits/det/hd.hpp"

namespace sb::ops {

// Momentum, sum form: M ← μ·M + G (one rounding).
SB_HD float muon_momentum(float m, float g, float mu) { return det::fma_f32(mu, m, g); }

// Newton–Schulz input: U = G + μ·M (Nesterov; M already updated, one rounding), or U = M.
SB_HD float muon_input(float g, float m, float mu, bool nesterov) { return nesterov ? det::fma_f32(mu, m, g) : m; }

// The lerp (EMA) form of torch.optim.Muon: M ← M + w·(G − M) with w = fl32(1 − μ) (the
// difference rounded, then one fma). Its Nesterov input G + μ·(M − G) is the same expression on
// the updated M: U = M + w·(G − M).
SB_HD float muon_lerp(float m, float g, float w) { return det::fma_f32(w, g - m, m); }

// The momentum step's constants: μ, w = fl32(1 − μ) (derived in fp64, rounded once), the form
// (optim.momentum_form) and Nesterov.
struct MuonMomentum {
  float mu;
  float w;
  bool lerp;
  bool nesterov;
};

// One element of the momentum step: m updated in place, the Newton–Schulz input U returned.
SB_HD float muon_momentum_step(float& m, float g, const MuonMomentum& k) {
  if (k.lerp) {
    m = muon_lerp(m, g, k.w);
    return k.nesterov ? muon_lerp(m, g, k.w) : m;
  }
  m = muon_momentum(m, g, k.mu);
  return muon_input(g, m, k.mu, k.nesterov);
}

// X₀ = U / denom, denom = fl32(‖U‖_F + ε) computed once per matrix (IEEE division).
SB_HD float muon_normalize(float u, float denom) { return u / denom; }

// B = b·A + c·(A·A): AA is the canonical GEMM A·A; fl32(b·A) then one fma.
SB_HD float ns_polynomial(float a_ij, float aa_ij, float b, float c) { return det::fma_f32(c, aa_ij, b * a_ij); }

// X ← a·X + B·X: BX is the canonical GEMM B·X; one fma.
SB_HD float ns_combine(float x, float bx, float a) { return det::fma_f32(a, x, bx); }

// One term of Newton–Schulz's orthogonality residual ‖XXᵀ − I‖²_F: (A_ij − δ_ij)² in fp64, with
// A = X·Xᵀ (the subtraction is exact, the square rounded once); the terms are summed exactly.
SB_HD double ortho_square(float a_ij, bool diagonal) {
  const double d = static_cast<double>(a_ij) - (diagonal ? 1.0 : 0.0);
  return d * d;
}

// Decoupled weight decay and the step: W ← fl32(W·decay) − step·X in one fma, with
// decay = fl32(1 − lr·wd) and step = fl32(lr·scale) (W·1 = W exactly when wd = 0).
SB_HD float muon_apply(float w, float x, float decay, float step) { return det::fma_f32(-step, x, w * decay); }

// Cautious weight decay (modded-nanogpt's NorMuon, 2025): the decay applies only where the step
// W ← W − step·X moves W towards zero, i.e. where W and X have the same strict sign (no decay
// where either is ±0 or NaN).
SB_HD bool cautious_decays(float w, float x) { return (w > 0.0f && x > 0.0f) || (w < 0.0f && x < 0.0f); }

// muon_apply with cautious weight decay: W ← fma(−step, X, fl32(W·decay)) where cautious_decays,
// else fma(−step, X, W).
SB_HD float muon_apply_cautious(float w, float x, float decay, float step) {
  return det::fma_f32(-step, x, cautious_decays(w, x) ? w * decay : w);
}

}  // namespace sb::ops
