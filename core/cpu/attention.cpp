// Causal multi-head attention on the CPU: OpenMP over (sequence, head) pairs, each computed whole
// by one thread. Every dot product is a canonical chain (rule 1) vectorised across independent
// outputs (keys, channels: `omp simd` lanes are separate chains), the softmax uses the exact max and det::lane32 sums (rule 2): bitwise
// equal to ops::attention_row_* and to core/cuda/attention.cu. Formulas: ops/attention.hpp.
#include <vector>

#include "cpu_backend.hpp"
#include "samebits/core/ops/attention.hpp"

namespace sb::cpu {

void CpuBackend::attention_forward(float* out, float* att, const float* qkv, int B, int T, int C,
                                   int NH) {
  const ReduceMode mode = numerics().reduce;
  const int hs = C / NH;
  const size_t ld = 3 * static_cast<size_t>(C);
  const float scale = ops::attention_scale(hs);
#pragma omp parallel
  {
    std::vector<float> kT(static_cast<size_t>(hs) * T);  // (hs, T): this head's keys, transposed
    std::vector<float> e(T), y(hs);                      // (T) numerators, (hs) output row
#pragma omp for schedule(static)
    for (int bh = 0; bh < B * NH; ++bh) {
      const int b = bh / NH, h = bh % NH;
      const float* q0 = qkv + static_cast<size_t>(b) * T * ld + h * hs;  // (T, ld)
      const float* k0 = q0 + C;
      const float* v0 = q0 + 2 * C;
      for (int j = 0; j < T; ++j)
        for (int d = 0; d < hs; ++d) kT[static_cast<size_t>(d) * T + j] = k0[j * ld + d];
      for (int t = 0; t < T; ++t) {
        const float* q = q0 + t * ld;
        float* row = att + (static_cast<size_t>(bh) * T + t) * T;  // (T)
        for (int j = 0; j <= t; ++j) row[j] = 0.0f;
        for (int d = 0; d < hs; ++d) {
          const float qd = q[d];
          const float* kd = kT.data() + static_cast<size_t>(d) * T;
          #pragma omp simd
          for (int j = 0; j <= t; ++j) row[j] = det::fma_f32(qd, kd[j], row[j]);
        }
        for (int j = 0; j <= t; ++j) row[j] = ops::attention_score(row[j], scale);
        const float m = ops::row_max(row, t + 1);
        for (int j = 0; j <= t; ++j) e[j] = ops::softmax_numerator(row[j], m);
        const float den = row_sum(e.data(), t + 1, mode);
        for (int j = 0; j <= t; ++j) row[j] = ops::softmax_prob(e[j], den);
        for (int j = t + 1; j < T; ++j) row[j] = 0.0f;
        for (int d = 0; d < hs; ++d) y[d] = 0.0f;
        for (int j = 0; j <= t; ++j) {
          const float p = row[j];
          const float* v = v0 + j * ld;
          #pragma omp simd
          for (int d = 0; d < hs; ++d) y[d] = det::fma_f32(p, v[d], y[d]);
        }
        float* o = out + (static_cast<size_t>(b) * T + t) * C + h * hs;
        for (int d = 0; d < hs; ++d) o[d] = y[d];
      }
    }
  }
}

void CpuBackend::attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv,
                                    const float* att, int B, int T, int C, int NH) {
  const ReduceMode mode = numerics().reduce;
  const int hs = C / NH;
  const size_t ld = 3 * static_cast<size_t>(C);
  const float scale = ops::attention_scale(hs);
#pragma omp parallel
  {
    std::vector<float> vT(static_cast<size_t>(hs) * T);  // (hs, T): this head's values, transposed
    std::vector<float> acc(hs);                          // (hs): one output row's chains
#pragma omp for schedule(static)
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
      float* dS = datt + static_cast<size_t>(bh) * T * T;                  // (T, T)
      for (int j = 0; j < T; ++j)
        for (int d = 0; d < hs; ++d) vT[static_cast<size_t>(d) * T + j] = v0[j * ld + d];
      // d(scores), row by row.
      for (int t = 0; t < T; ++t) {
        const float* dy = dy0 + static_cast<size_t>(t) * C;
        const float* p = P + static_cast<size_t>(t) * T;
        float* ds = dS + static_cast<size_t>(t) * T;
        for (int j = 0; j <= t; ++j) ds[j] = 0.0f;
        for (int d = 0; d < hs; ++d) {
          const float g = dy[d];
          const float* vd = vT.data() + static_cast<size_t>(d) * T;
          #pragma omp simd
          for (int j = 0; j <= t; ++j) ds[j] = det::fma_f32(g, vd[j], ds[j]);
        }
        const float s = row_dot(p, ds, t + 1, mode);
        for (int j = 0; j <= t; ++j) ds[j] = ops::attention_dscore(p[j], ds[j], s, scale);
        for (int j = t + 1; j < T; ++j) ds[j] = 0.0f;
      }
      // dq[t] = Σ_{j ≤ t} ds[t][j]·k[j].
      for (int t = 0; t < T; ++t) {
        const float* ds = dS + static_cast<size_t>(t) * T;
        for (int d = 0; d < hs; ++d) acc[d] = 0.0f;
        for (int j = 0; j <= t; ++j) {
          const float* k = k0 + j * ld;
          #pragma omp simd
          for (int d = 0; d < hs; ++d) acc[d] = det::fma_f32(ds[j], k[d], acc[d]);
        }
        for (int d = 0; d < hs; ++d) dq0[t * ld + d] = acc[d];
      }
      // dk[j] = Σ_{t ≥ j} ds[t][j]·q[t];  dv[j] = Σ_{t ≥ j} p[t][j]·dy[t]  (t ascending).
      for (int j = 0; j < T; ++j) {
        for (int d = 0; d < hs; ++d) acc[d] = 0.0f;
        for (int t = j; t < T; ++t) {
          const float g = dS[static_cast<size_t>(t) * T + j];
          const float* q = q0 + t * ld;
          #pragma omp simd
          for (int d = 0; d < hs; ++d) acc[d] = det::fma_f32(g, q[d], acc[d]);
        }
        for (int d = 0; d < hs; ++d) dk0[j * ld + d] = acc[d];
        for (int d = 0; d < hs; ++d) acc[d] = 0.0f;
        for (int t = j; t < T; ++t) {
          const float g = P[static_cast<size_t>(t) * T + j];
          const float* dy = dy0 + static_cast<size_t>(t) * C;
          #pragma omp simd
          for (int d = 0; d < hs; ++d) acc[d] = det::fma_f32(g, dy[d], acc[d]);
        }
        for (int d = 0; d < hs; ++d) dv0[j * ld + d] = acc[d];
      }
    }
  }
}

}  // namespace sb::cpu
