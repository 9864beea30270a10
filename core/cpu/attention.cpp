// Causal multi-head attention on the CPU: OpenMP over (sequence, head) pairs, each computed whole
// by one thread. Every dot product is a canonical chain (rule 1) run by the blocked GEMM kernel on
// that thread (serial_gemm, with the causal parts that skip what the mask zeroes; under
// numerics.gemm=exact the exact GEMM of the full products); the
// softmax uses the exact max and det::lane32 sums (rule 2). Bitwise equal to ops::attention_row_*
// and to core/cuda/attention.cu for finite q, k, v, dy (a non-finite one makes the rows it reaches
// NaN either way, though not always the same entries). Formulas: ops/attention.hpp.
#include "samebits/core/ops/attention.hpp"
#include "cpu_backend_class.hpp"

namespace sb::cpu {
namespace {

// One row of probabilities in place: row[j] ← scores·scale, then the softmax over j < n (exact max,
// samebits exp, the row_sum of the reduce mode, one division). Flattened so that exp inlines and
// the elementwise loops vectorise (SIMD lanes are separate elements, each with the scalar's IEEE
// operations).  row: (n)
[[gnu::flatten]] void softmax_row(float* row, int n, float scale, ReduceMode mode) {
#pragma omp simd
  for (int j = 0; j < n; ++j) row[j] = ops::attention_score(row[j], scale);
  const float m = ops::row_max(row, n);
#pragma omp simd
  for (int j = 0; j < n; ++j) row[j] = ops::softmax_numerator(row[j], m);
  const float den = row_sum(row, n, mode);
#pragma omp simd
  for (int j = 0; j < n; ++j) row[j] = ops::softmax_prob(row[j], den);
}

}  // namespace

void CpuBackend::attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  const ReduceMode mode = numerics().reduce;
  const int hs = C / NH;
  const int ld = 3 * C;
  const float scale = ops::attention_scale(hs);
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < B * NH; ++bh) {
    const int b = bh / NH, h = bh % NH;
    const float* q0 = qkv + static_cast<size_t>(b) * T * ld + h * hs;  // (T, ld) each
    const float* k0 = q0 + C;
    const float* v0 = q0 + 2 * C;
    float* P = att + static_cast<size_t>(bh) * T * T;           // (T, T)
    float* y0 = out + static_cast<size_t>(b) * T * C + h * hs;  // (T, C)
    // Scores s[t][j] = canonical_dot(q_t, k_j) for j ≤ t (the rest is overwritten below).
    serial_gemm(GemmPart::lower, {Trans::no, Trans::yes, T, T, hs, q0, ld, k0, ld, P, T});
    for (int t = 0; t < T; ++t) {
      float* row = P + static_cast<size_t>(t) * T;  // (T)
      softmax_row(row, t + 1, scale, mode);
      for (int j = t + 1; j < T; ++j) row[j] = 0.0f;
    }
    // y[t] = Σ_{j ≤ t} p[t][j]·v[j] (P is +0 beyond t).
    serial_gemm(GemmPart::k_to_row, {Trans::no, Trans::no, T, hs, T, P, T, v0, ld, y0, C});
  }
}

void CpuBackend::attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv, const float* att,
                                    int B, int T, int C, int NH) {
  const ReduceMode mode = numerics().reduce;
  const int hs = C / NH;
  const int ld = 3 * C;
  const float scale = ops::attention_scale(hs);
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < B * NH; ++bh) {
    const int b = bh / NH, h = bh % NH;
    const size_t base = static_cast<size_t>(b) * T * ld + h * hs;
    const float* q0 = qkv + base;  // (T, ld) each
    const float* k0 = q0 + C;
    const float* v0 = q0 + 2 * C;
    float* dq0 = dqkv + base;
    float* dk0 = dq0 + C;
    float* dv0 = dq0 + 2 * C;
    const float* dy0 = dout + static_cast<size_t>(b) * T * C + h * hs;  // (T, C)
    const float* P = att + static_cast<size_t>(bh) * T * T;             // (T, T)
    float* dS = datt + static_cast<size_t>(bh) * T * T;                 // (T, T)
    // dp[t][j] = canonical_dot(dy_t, v_j) for j ≤ t, then d(scores) row by row.
    serial_gemm(GemmPart::lower, {Trans::no, Trans::yes, T, T, hs, dy0, C, v0, ld, dS, T});
    for (int t = 0; t < T; ++t) {
      const float* p = P + static_cast<size_t>(t) * T;
      float* ds = dS + static_cast<size_t>(t) * T;
      const float s = row_dot(p, ds, t + 1, mode);
      for (int j = 0; j <= t; ++j) ds[j] = ops::attention_dscore(p[j], ds[j], s, scale);
      for (int j = t + 1; j < T; ++j) ds[j] = 0.0f;
    }
    // dq[t] = Σ_{j ≤ t} ds[t][j]·k[j];  dk[j] = Σ_{t ≥ j} ds[t][j]·q[t];
    // dv[j] = Σ_{t ≥ j} p[t][j]·dy[t]  (t ascending; dS and P are +0 above the diagonal).
    serial_gemm(GemmPart::k_to_row, {Trans::no, Trans::no, T, hs, T, dS, T, k0, ld, dq0, ld});
    serial_gemm(GemmPart::k_from_row, {Trans::yes, Trans::no, T, hs, T, dS, T, q0, ld, dk0, ld});
    serial_gemm(GemmPart::k_from_row, {Trans::yes, Trans::no, T, hs, T, P, T, dy0, C, dv0, ld});
  }
}

}  // namespace sb::cpu
