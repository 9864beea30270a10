// Causal multi-head attention formulas, host and device. Scores and weighted sums are canonical
// dots (rule 1) over the causal positions only; softmax uses the exact max (rule 6) and the
// 32-lane denominator (rule 2); Σ_j p_j·dp_j in the backward is a 32-lane fma row reduction.
// Per (b, h): q, k, v rows t at q + t·ld (ld = 3C), att and datt rows t at att + t·T.
//   forward   s[t][j]  = canonical_dot(q_t, k_j)·scale, j ≤ t;  p = softmax(s[t][0..t])
//             y[t][d]  = Σ_{j ≤ t} p[t][j]·v[j][d]     (chain over j ascending)
//   backward  dp[t][j] = canonical_dot(dy_t, v_j)
//             ds[t][j] = (p[t][j]·(dp[t][j] − Σ_i p[t][i]·dp[t][i]))·scale
//             dq[t][d] = Σ_{j ≤ t} ds[t][j]·k[j][d]   (j ascending)
//             dk[j][d] = Σ_{t ≥ j} ds[t][j]·q[t][d]   (t ascending: tokens, rule 3)
//             dv[j][d] = Σ_{t ≥ j} p[t][j]·dy[t][d]   (t ascending)
#pragma once
#include <cstddef>

#include "samebits/core/ops/matmul.hpp"
#include "samebits/core/ops/softmax.hpp"
#include "samebits/det/hd.hpp"
#include "samebits/det/lane32.hpp"

namespace sb::ops {

// 1/√hs: one IEEE square root and one division.
SB_HD float attention_scale(int hs) { return 1.0f / det::sqrt_f32(static_cast<float>(hs)); }

SB_HD float attention_score(float dot, float scale) { return dot * scale; }

SB_HD float attention_dscore(float p, float dp, float sum_p_dp, float scale) { return (p * (dp - sum_p_dp)) * scale; }

}  // namespace sb::ops
