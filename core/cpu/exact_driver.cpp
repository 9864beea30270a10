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

// Tile (ip, jp) of C: the exact integer dots, then one rounding per element.
void exact_tile(const gemm::Problem& g, const Sliced& sl, Kernel kern, int ip, int jp, const float* bias) {
  const bool narrow = ex::narrow_dot(g.k, sl.s);
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
  for (int r = 0; r < rows; ++r)
    for (int q = 0; q < cols; ++q) {
      const int i = ip * MR + r, j = jp * NR + q;
      store_element(g, i, j, ex::slice_dot(&sums[0][r * NR + q], MR * NR, sl.s, narrow), sl.row_exp[i], sl.col_exp[j],
                    sl.s, sl.row_bad[i] != 0 || sl.col_bad[j] != 0, bias);
    }
}

}  // namespace

void store_element(const gemm::Problem& g, int i, int j, __int128 S, int E, int F, int s, bool bad, const float* bias) {
  float* c = g.c + static_cast<size_t>(i) * g.ldc + j;
  const float out = ex::exact_output(S, E, F, s, bad, g.accumulate, *c);
  *c = bias != nullptr ? ops::linear_out(out, bias[j]) : out;
}

void gemm_exact(const gemm::Problem& g, const float* bias) {
  SB_CHECK(g.k <= ex::kMaxK, "numerics.gemm=exact sums slice products in int32, exact while k·63² < 2³¹: k must be ",
           "at most ", ex::kMaxK, ", got k=", g.k, "; use numerics.gemm=canonical for this product");
  static_assert(2 * 4 - 1 <= kMaxWeights, "pair weights of the largest slice count");
  const Isa isa = active_isa();
#if defined(SB_HAVE_ONEDNN)
  if (isa == Isa::onednn || isa == Isa::amx) return gemm_exact_onednn(g, bias, isa == Isa::amx);
#endif
  const Kernel kern = kernel(isa);
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
