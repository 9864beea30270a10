// A Mixture-of-Experts router (docs/CONTRACT.md §MoE), host and device, one definition per token
// over its E logits with a fixed operation order and samebits exp: the scores (softmax: exact max,
// exp(z − max), the sum a chain over experts ascending from +0, one division; sigmoid: 1/(1 +
// exp(−z))), the top-k selection by comparisons only (the larger score first; equal scores: the
// lower expert index), the gates (softmax: the selected probabilities; sigmoid: the selected scores
// divided by their sum, a chain in ascending index), their backward, and the Switch/GShard
// load-balancing loss α·E·Σ_e f_e·P_e of a leaf (f_e: the fraction of the leaf's N·k selections
// that chose e; P_e: e's mean probability over the leaf's tokens, a chain over tokens ascending; its
// gradient α·E·f_e/N on each token's probability of e), and the auxiliary-loss-free bias that
// steers the selection (DeepSeek-V3). Bitwise equal wherever it runs.
#pragma once
#include <cstdint>

#include "samebits/core/ops/softmax.hpp"
#include "samebits/det/hd.hpp"
#include "samebits/det/math.hpp"

namespace sb::ops {

SB_HD float moe_sigmoid(float z) { return 1.0f / (1.0f + det::exp(-z)); }

// scores (E) of the logits z (E): softmax or sigmoid.
SB_HD void moe_scores(const float* z, int E, bool softmax, float* scores) {
  if (!softmax) {
    for (int e = 0; e < E; ++e) scores[e] = moe_sigmoid(z[e]);
    return;
  }
  const float m = row_max(z, E);
  float sum = 0.0f;
  for (int e = 0; e < E; ++e) sum += (scores[e] = softmax_numerator(z[e], m));
  for (int e = 0; e < E; ++e) scores[e] = softmax_prob(scores[e], sum);
}

// Expert a ranks before b: the larger score, or the lower index when equal (NaN-free scores).
SB_HD bool moe_ranks_before(float sa, int a, float sb, int b) { return sa > sb || (sa == sb && a < b); }

// The scores the top-k compares (E): scores + bias, one fp32 add each (DeepSeek-V3's
// auxiliary-loss-free balancing: the bias steers the selection, never the gates).
SB_HD void moe_selection_scores(const float* scores, const float* bias, int E, float* out) {
  for (int e = 0; e < E; ++e) out[e] = scores[e] + bias[e];
}

// The bias update after a step (E): b_e ← b_e + rate when expert e took fewer than the mean of the
// step's selections counts (E, all leaves and ranks), b_e − rate when more, unchanged when equal —
// the sign compared in integers (Σ counts against E·count_e), the add one fp32 rounding.
SB_HD void moe_bias_update(float* bias, const int64_t* counts, int E, float rate) {
  int64_t total = 0;
  for (int e = 0; e < E; ++e) total += counts[e];
  for (int e = 0; e < E; ++e) {
    const int64_t scaled = int64_t{E} * counts[e];
    if (scaled < total) bias[e] = bias[e] + rate;
    else if (scaled > total) bias[e] = bias[e] - rate;
  }
}

// The k selected experts (k ≤ E), in ascending index, into chosen (k).
SB_HD void moe_top_k(const float* scores, int E, int k, int32_t* chosen) {
  for (int j = 0; j < k; ++j) {  // the j-th best: the best expert not yet taken
    int best = -1;
    for (int e = 0; e < E; ++e) {
      bool taken = false;
      for (int i = 0; i < j; ++i) taken = taken || chosen[i] == e;
      if (!taken && (best < 0 || moe_ranks_before(scores[e], e, scores[best], best))) best = e;
    }
    chosen[j] = best;
  }
  for (int i = 1; i < k; ++i)  // ascending index (insertion sort)
    for (int j = i; j > 0 && chosen[j - 1] > chosen[j]; --j) {
      const int32_t t = chosen[j];
      chosen[j] = chosen[j - 1];
      chosen[j - 1] = t;
    }
}

// The tokens (n) whose expert sets differ between a and b (n, k each, every token's k experts in
// ascending index as moe_top_k gives them: sets differ iff an entry does). A route flip, a route
// that two models disagree on.
inline int64_t moe_routes_differing(const int32_t* a, const int32_t* b, int64_t n, int k) {
  int64_t differing = 0;
  for (int64_t t = 0; t < n; ++t) {
    bool same = true;
    for (int j = 0; j < k; ++j) same = same && a[t * k + j] == b[t * k + j];
    differing += same ? 0 : 1;
  }
  return differing;
}

// gates (k) of the chosen experts (k, ascending).
SB_HD void moe_gates(const float* scores, const int32_t* chosen, int k, bool softmax, float* gates) {
  float sum = 0.0f;
  for (int j = 0; j < k; ++j) sum += scores[chosen[j]];
  for (int j = 0; j < k; ++j) gates[j] = softmax ? scores[chosen[j]] : scores[chosen[j]] / sum;
}

// d(scores) (E, written whole) of one token from its gates' gradients dgates (k) and the
// load-balancing term aux (E: the loss's gradient on each score; null: none). softmax: the
// probabilities' gradients are dgates on the chosen ones plus aux; sigmoid: the normalised gates'
// backward ds_i = (dg_i − Σ_j dg_j·g_j)/S over the chosen (S their scores' sum, the Σ a chain in
// ascending index), plus aux.
SB_HD void moe_score_gradient(const float* scores, const int32_t* chosen, const float* gates, const float* dgates,
                              int E, int k, bool softmax, const float* aux, float* dscores) {
  for (int e = 0; e < E; ++e) dscores[e] = aux != nullptr ? aux[e] : 0.0f;
  if (softmax) {
    for (int j = 0; j < k; ++j) dscores[chosen[j]] += dgates[j];
    return;
  }
  float sum = 0.0f, dot = 0.0f;
  for (int j = 0; j < k; ++j) sum += scores[chosen[j]];
  for (int j = 0; j < k; ++j) dot = det::fma_f32(dgates[j], gates[j], dot);
  for (int j = 0; j < k; ++j) dscores[chosen[j]] += (dgates[j] - dot) / sum;
}

// d(logits) (E) of one token from d(scores): softmax dz_e = p_e·(ds_e − Σ p·ds) (the Σ a chain
// of fma over experts ascending); sigmoid dz_e = ds_e·(s_e·(1 − s_e)).
SB_HD void moe_logit_gradient(const float* scores, const float* dscores, int E, bool softmax, float* dlogits) {
  if (!softmax) {
    for (int e = 0; e < E; ++e) dlogits[e] = dscores[e] * (scores[e] * (1.0f - scores[e]));
    return;
  }
  float dot = 0.0f;
  for (int e = 0; e < E; ++e) dot = det::fma_f32(scores[e], dscores[e], dot);
  for (int e = 0; e < E; ++e) dlogits[e] = scores[e] * (dscores[e] - dot);
}

// A token's router entropy −Σ_e p_e·log p_e (a statistic): p the softmax's probabilities, or the
// sigmoid's scores over their sum (a chain ascending, one division each); terms with p = 0 are 0;
// the sum a chain over experts ascending, samebits log.
SB_HD float moe_entropy(const float* scores, int E, bool softmax) {
  float total = 1.0f;
  if (!softmax) {
    total = 0.0f;
    for (int e = 0; e < E; ++e) total += scores[e];
  }
  float h = 0.0f;
  for (int e = 0; e < E; ++e) {
    const float p = softmax ? scores[e] : scores[e] / total;
    if (p > 0.0f) h -= p * det::log(p);
  }
  return h;
}

// The load-balancing loss of a leaf from its selection counts (E) and score sums (E, chains over
// tokens ascending), N tokens, k selections each: α·E·Σ_e (count_e/(N·k))·(sum_e/N), in fp64
// (a statistic and the source of the gradient below, not a chain of the model).
SB_HD double moe_aux_loss(const int64_t* counts, const float* sums, int E, int64_t N, int k, double alpha) {
  double total = 0.0;
  for (int e = 0; e < E; ++e) total += (double(counts[e]) / double(N * k)) * (double(sums[e]) / double(N));
  return alpha * double(E) * total;
}

// Its gradient on a token's score of expert e: α·E·f_e/N, rounded to fp32 once, times the loss scale.
SB_HD float moe_aux_gradient(int64_t count, int E, int64_t N, int k, double alpha, float loss_scale) {
  return static_cast<float>(alpha * double(E) * (double(count) / double(N * k)) / double(N)) * loss_scale;
}

}  // namespace sb::ops
