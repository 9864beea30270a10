// Causal multi-head attention on the GPU. Forward: one warp per query row (b, h, t) — lane l takes
// keys j = l, l+32, ... (scores as canonical dots, rule 1), the exact max and the 32-lane
// denominator by shuffles (rules 6, 2), then each lane owns channels d of the weighted sum (a
// chain over j ascending). Backward: one warp per row for d(scores) (the Σ p·dp row sum in the
// 32-lane form), then one thread per (b, h, row, channel) for dq, dk, dv — chains over j or t
// ascending. Under numerics.gemm = exact every product is instead the exact GEMM of the full
// matrices per (sequence, head) (exact_gemm.cu), the kernels only doing the softmax and d(scores)
// rows between them, as core/cpu/attention.cpp does. Formulas: ops/attention.hpp; bitwise
// core/cpu/attention.cpp for any launch.
#include "cuda_backend_class.hpp"
#include "samebits/core/cuda/lane32_warp.cuh"
#include "samebits/core/ops/attention.hpp"
#include "samebits/det/bits.hpp"

namespace sb::cuda {
namespace {

// Pointers of one (sequence b, head h): q, k, v rows t at q0 + t·ld (ld = 3C).
struct Head {
  int64_t bh;  // b·NH + h
  const float* q0;
  ptrdiff_t ld;
};

__device__ inline Head head_of(const float* qkv, int64_t bh, int T, int C, int NH) {
  const int64_t b = bh / NH, h = bh % NH;
  const ptrdiff_t ld = 3 * static_cast<ptrdiff_t>(C);
  return {bh, qkv + b * T * ld + h * (C / NH), ld};
}

// exact: the scores are already in att (the exact GEMM's), and the weighted sum is left to it.
__global__ void attention_forward_kernel(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                                         bool exact) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= static_cast<int64_t>(B) * NH * T) return;  // the whole warp leaves together
  const int t = static_cast<int>(row % T);
  const Head hd = head_of(qkv, row / T, T, C, NH);
  const int hs = C / NH;
  const float* q = hd.q0 + t * hd.ld;  // (hs)
  const float* k0 = hd.q0 + C;         // (T, ld)
  const float* v0 = hd.q0 + 2 * C;     // (T, ld)
  float* p = att + row * T;            // (T): scores, then numerators, then probabilities
  const float scale = ops::attention_scale(hs);
  float m = det::float_of_bits(0xff800000u);  // -inf, as ops::row_max starts
  for (int j = lane; j <= t; j += 32) {
    const float s = ops::attention_score(exact ? p[j] : ops::canonical_dot(q, 1, k0 + j * hd.ld, 1, hs, 0.0f), scale);
    p[j] = s;
    m = ops::exact_max(m, s);
  }
  m = warp_exact_max(m);
  float den = 0.0f;
  for (int j = lane; j <= t; j += 32) {
    const float e = ops::softmax_numerator(p[j], m);
    p[j] = e;
    den = den + e;
  }
  den = warp_lane32_fold(den);
  for (int j = lane; j <= t; j += 32) p[j] = ops::softmax_prob(p[j], den);
  for (int j = t + 1 + lane; j < T; j += 32) p[j] = 0.0f;
  if (exact) return;
  __syncwarp();  // every lane's probabilities visible to the whole warp
  const int64_t b = row / T / NH, h = (row / T) % NH;
  float* o = out + (b * T + t) * C + h * hs;  // (hs)
  for (int d = lane; d < hs; d += 32) o[d] = ops::canonical_dot(p, 1, v0 + d, hd.ld, t + 1, 0.0f);
}

// datt row (b, h, t): dp[j] = canonical_dot(dy_t, v_j), then ds[j] = attention_dscore(p, dp,
// Σ_j p·dp (32-lane form), scale); zeros beyond t. exact: dp is already in datt (the exact GEMM's).
__global__ void attention_dscores_kernel(float* datt, const float* dout, const float* qkv, const float* att, int B,
                                         int T, int C, int NH, bool exact) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= static_cast<int64_t>(B) * NH * T) return;
  const int t = static_cast<int>(row % T);
  const Head hd = head_of(qkv, row / T, T, C, NH);
  const int hs = C / NH;
  const int64_t b = row / T / NH, h = (row / T) % NH;
  const float* dy = dout + (b * T + t) * C + h * hs;  // (hs)
  const float* v0 = hd.q0 + 2 * C;                    // (T, ld)
  const float* p = att + row * T;                     // (T)
  float* ds = datt + row * T;                         // (T)
  const float scale = ops::attention_scale(hs);
  float s = 0.0f;
  for (int j = lane; j <= t; j += 32) {
    const float dp = exact ? ds[j] : ops::canonical_dot(dy, 1, v0 + j * hd.ld, 1, hs, 0.0f);
    ds[j] = dp;
    s = det::fma_f32(p[j], dp, s);
  }
  const float sum_p_dp = warp_lane32_fold(s);
  for (int j = lane; j <= t; j += 32) ds[j] = ops::attention_dscore(p[j], ds[j], sum_p_dp, scale);
  for (int j = t + 1 + lane; j < T; j += 32) ds[j] = 0.0f;
}

// One thread per (b, h, r, d): dq[r][d] = Σ_{j ≤ r} ds[r][j]·k[j][d] (j ascending);
// dk[r][d] = Σ_{t ≥ r} ds[t][r]·q[t][d] and dv[r][d] = Σ_{t ≥ r} p[t][r]·dy[t][d] (t ascending).
__global__ void attention_dqkv_kernel(float* dqkv, const float* datt, const float* dout, const float* qkv,
                                      const float* att, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const int64_t total = static_cast<int64_t>(B) * NH * T * hs;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += stride) {
    const int d = static_cast<int>(idx % hs);
    const int r = static_cast<int>((idx / hs) % T);
    const int64_t bh = idx / hs / T;
    const Head hd = head_of(qkv, bh, T, C, NH);
    const int64_t b = bh / NH, h = bh % NH;
    const float* q0 = hd.q0;                       // (T, ld)
    const float* k0 = hd.q0 + C;                   // (T, ld)
    const float* dS = datt + bh * T * T;           // (T, T)
    const float* P = att + bh * T * T;             // (T, T)
    const float* dy0 = dout + b * T * C + h * hs;  // (T, C)
    float* dq = dqkv + (hd.q0 - qkv) + r * hd.ld + d;
    dq[0] = ops::canonical_dot(dS + static_cast<int64_t>(r) * T, 1, k0 + d, hd.ld, r + 1, 0.0f);
    dq[C] = ops::canonical_dot(dS + static_cast<int64_t>(r) * T + r, T, q0 + r * hd.ld + d, hd.ld, T - r, 0.0f);
    dq[2 * C] = ops::canonical_dot(P + static_cast<int64_t>(r) * T + r, T, dy0 + static_cast<int64_t>(r) * C + d, C,
                                   T - r, 0.0f);
  }
}

// Where (sequence b, head h) starts: in qkv (T, 3C), in out and dout (T, C), in att (T, T).
struct HeadOffsets {
  int64_t qkv, out, att;
};
template <class F>
void for_each_head(int B, int T, int C, int NH, F f) {
  for (int64_t bh = 0; bh < static_cast<int64_t>(B) * NH; ++bh) {
    const int64_t b = bh / NH, h = bh % NH, hs = C / NH;
    f(HeadOffsets{b * T * 3 * C + h * hs, b * T * C + h * hs, bh * T * T});
  }
}

}  // namespace

void CudaBackend::attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  const int64_t rows = static_cast<int64_t>(B) * NH * T;
  if (rows <= 0) return;
  activate();
  const bool exact = numerics().gemm == GemmMode::exact;
  const int hs = C / NH, ld = 3 * C;
  constexpr Precision fp32 = Precision::fp32;  // attention's products are fp32 (as on the CPU)
  if (exact)
    for_each_head(B, T, C, NH, [&](HeadOffsets o) {  // scores s = q·kᵀ, the full (T, T)
      gemm_exact({Trans::no, Trans::yes, T, T, hs, qkv + o.qkv, ld, qkv + o.qkv + C, ld, att + o.att, T, false, fp32});
    });
  const int warps = launch().row_warps;
  attention_forward_kernel<<<grid_for_rows(rows, warps), warps * 32, 0, stream()>>>(out, att, qkv, B, T, C, NH, exact);
  SB_CUDA_CHECK_LAUNCH();
  if (exact)
    for_each_head(B, T, C, NH, [&](HeadOffsets o) {  // y = P·v (P is +0 above the diagonal)
      gemm_exact(
          {Trans::no, Trans::no, T, hs, T, att + o.att, T, qkv + o.qkv + 2 * C, ld, out + o.out, C, false, fp32});
    });
}

void CudaBackend::attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv, const float* att,
                                     int B, int T, int C, int NH) {
  const int64_t rows = static_cast<int64_t>(B) * NH * T;
  if (rows <= 0) return;
  activate();
  const bool exact = numerics().gemm == GemmMode::exact;
  const int hs = C / NH, ld = 3 * C;
  constexpr Precision fp32 = Precision::fp32;
  if (exact)
    for_each_head(B, T, C, NH, [&](HeadOffsets o) {  // dp = dy·vᵀ, the full (T, T)
      gemm_exact(
          {Trans::no, Trans::yes, T, T, hs, dout + o.out, C, qkv + o.qkv + 2 * C, ld, datt + o.att, T, false, fp32});
    });
  const int warps = launch().row_warps;
  attention_dscores_kernel<<<grid_for_rows(rows, warps), warps * 32, 0, stream()>>>(datt, dout, qkv, att, B, T, C, NH,
                                                                                    exact);
  SB_CUDA_CHECK_LAUNCH();
  if (exact) {
    for_each_head(B, T, C, NH, [&](HeadOffsets o) {  // dq = dS·k, dk = dSᵀ·q, dv = Pᵀ·dy
      const float* q0 = qkv + o.qkv;
      float* dq0 = dqkv + o.qkv;
      gemm_exact({Trans::no, Trans::no, T, hs, T, datt + o.att, T, q0 + C, ld, dq0, ld, false, fp32});
      gemm_exact({Trans::yes, Trans::no, T, hs, T, datt + o.att, T, q0, ld, dq0 + C, ld, false, fp32});
      gemm_exact({Trans::yes, Trans::no, T, hs, T, att + o.att, T, dout + o.out, C, dq0 + 2 * C, ld, false, fp32});
    });
    return;
  }
  const int64_t total = rows * (C / NH);
  const int threads = launch().block_threads;
  attention_dqkv_kernel<<<grid_for(total, threads), threads, 0, stream()>>>(dqkv, datt, dout, qkv, att, B, T, C, NH);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::cuda
