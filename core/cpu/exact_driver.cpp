// The exact GEMM's driver: slice both operands (exact_pack.cpp), then per MR × NR tile of C every
// slice pair's int32 dot from the kernel, summed exactly in int64 per pair weight and in __int128
// across weights, and rounded once (ops::exact::exact_element). OpenMP over panels and tiles; every
// sum is of integers, so neither the thread count nor the kernel nor the tile order moves a bit.
#include <omp.h>

#include <algorithm>

#include "exact_gemm.hpp"
#include "samebits/core/ops/exact_gemm.hpp"
#include "samebits/core/ops/matmul.hpp"
#include "samebits/det/error.hpp"

namespace sb::cpu::exact {
namespace {

namespace ex = ops::exact;

constexpr int kMaxWeights = 2 * 4 - 1;  // pair weights t + u for up to 4 slices

// The integer dot of element e: Σ_v sums[v][e]·2^(6(2s−2−v)). |S| ≤ k·2^(12s); when that is below
// 2^63, wrapping 64-bit arithmetic ends at the exact S whatever its intermediate values.
int64_t dot_narrow(const int64_t (*sums)[MR * NR], int e, int s) {
  uint64_t acc = 0;
  for (int v = 0; v <= 2 * s - 2; ++v) acc += static_cast<uint64_t>(sums[v][e]) << ex::pair_shift(v, 0, s);
  return static_cast<int64_t>(acc);
}
__int128 dot_wide(const int64_t (*sums)[MR * NR], int e, int s) {
  __int128 acc = 0;
  for (int v = 0; v <= 2 * s - 2; ++v) acc += static_cast<__int128>(sums[v][e]) << ex::pair_shift(v, 0, s);
  return acc;
}

// Tile (ip, jp) of C: the exact integer dots, then one rounding per element.
void exact_tile(const gemm::Problem& g, const Sliced& sl, Kernel kern, int ip, int jp, const float* bias) {
  const bool narrow = g.k < (int64_t{1} << (63 - 2 * ex::kDigitBits * sl.s));
  // The pairs (t, u) of one weight v = t + u continue one int32 dot while their true sum is
  // exact in int32 (at most s pairs: k·s·63² < 2³¹), else each pair is added in int64.
  const bool grouped = int64_t{g.k} * sl.s <= ex::kMaxK;
  int64_t sums[kMaxWeights][MR * NR] = {};
  alignas(64) int32_t d[MR * NR];
  for (int v = 0; v <= 2 * sl.s - 2; ++v) {
    const int t0 = std::max(0, v - sl.s + 1), t1 = std::min(v, sl.s - 1);
    for (int t = t0; t <= t1; ++t) {
      kern(sl.kq, sl.a_at(ip, t), sl.b_at(jp, v - t), sl.sum_at(jp, v - t), d, grouped && t > t0);
      if (!grouped || t == t1)
        for (int e = 0; e < MR * NR; ++e) sums[v][e] += d[e];
    }
  }
  const int rows = std::min(MR, g.m - ip * MR), cols = std::min(NR, g.n - jp * NR);
  for (int r = 0; r < rows; ++r) {
    const int i = ip * MR + r;
    float* c = g.c + static_cast<size_t>(i) * g.ldc + jp * NR;  // (cols)
    for (int q = 0; q < cols; ++q) {
      const int j = jp * NR + q;
      const int e = r * NR + q;
      const __int128 S = narrow ? static_cast<__int128>(dot_narrow(sums, e, sl.s)) : dot_wide(sums, e, sl.s);
      float out = ex::exact_element(S, sl.row_exp[i], sl.col_exp[j], sl.s, sl.row_bad[i] != 0 || sl.col_bad[j] != 0);
      if (g.accumulate) out = ex::exact_accumulate(c[q], out);
      c[q] = bias != nullptr ? ops::linear_out(out, bias[j]) : out;
    }
  }
}

}  // namespace

void gemm_exact(const gemm::Problem& g, const float* bias) {
  SB_CHECK(g.k <= ex::kMaxK, "numerics.gemm=exact sums slice products in int32, exact while k·63² < 2³¹: k must be ",
           "at most ", ex::kMaxK, ", got k=", g.k, "; use numerics.gemm=canonical for this product");
  static_assert(2 * 4 - 1 <= kMaxWeights, "pair weights of the largest slice count");
  const Kernel kern = kernel(active_isa());
  thread_local Sliced buffers;  // the calling thread's, reused across its calls
  Sliced& sl = buffers;         // (shared with the team: each thread's own would be empty)
  sl.resize(g);
  const int tiles = sl.mp * sl.np;
#pragma omp parallel if (!omp_in_parallel())
  {
#pragma omp for schedule(static) nowait
    for (int ip = 0; ip < sl.mp; ++ip) sl.pack_a_panel(g, ip);
#pragma omp for schedule(static)
    for (int jp = 0; jp < sl.np; ++jp) sl.pack_b_panel(g, jp);
#pragma omp for schedule(static)
    for (int tile = 0; tile < tiles; ++tile) exact_tile(g, sl, kern, tile % sl.mp, tile / sl.mp, bias);
  }
}

}  // namespace sb::cpu::exact
