// The bf16 pair order's driver (numerics.bf16_dot = pairs): every C element is ops::bf16_pair_dot's
// chain — k in pairs from p = 0, the odd product then the even one, from +0 or from C's value read
// flushed. Operands are packed once as bf16 pairs (rounded RNE, subnormals as ±0, an odd k's pads)
// by the path's packer, panel by panel; the kernels continue each tile's chains across k-blocks,
// never add partials; a syrk runs the upper triangle's tiles and mirrors them. OpenMP over panels
// (pure conversion) and output tiles: the bits depend on neither the thread count, the tiles nor
// the path.
#include <algorithm>
#include <vector>

#include "bf16_pairs.hpp"
#include "gemm_tile.hpp"
#include "samebits/core/ops/bf16_pairs.hpp"
#include "samebits/core/ops/matmul.hpp"

namespace sb::cpu::pairs {
namespace {

constexpr int KP = 128;        // pairs of k per block of a tile's pass
constexpr int TI = 8, TJ = 4;  // one parallel task: TI row panels × TJ column panels
constexpr int PL = 512;        // lanes per packing task: 2 KiB of each row read across at a time
static_assert(PL % MR == 0 && PL % NR == 0, "a packing task's lanes are whole panels");

struct Packed {
  std::vector<uint32_t> a, b;  // (mp, kp, MR), (np, kp, NR)
  int mp, np, kp;
};

// Rows [i, i + lanes) of op(A) / columns [j, j + lanes) of op(B) as lines to pack.
Lines a_lines(const ops::GemmProblem& g, int i, int lanes) {
  const bool along = !g.a_transposed();
  const float* x = g.a + (along ? static_cast<size_t>(i) * g.lda : i);
  return {x, static_cast<size_t>(g.lda), along, std::min(lanes, g.m - i), g.k, ops::kBf16PadA};
}
Lines b_lines(const ops::GemmProblem& g, int j, int lanes) {
  const bool along = g.b_transposed();
  const float* x = g.b + (along ? static_cast<size_t>(j) * g.ldb : j);
  return {x, static_cast<size_t>(g.ldb), along, std::min(lanes, g.n - j), g.k, ops::kBf16PadB};
}

// Whether tile (ip, jp) runs: every tile, or for a syrk (upper) those that reach the upper
// triangle j ≥ i.
bool runs(bool upper, int ip, int jp) { return !upper || (jp + 1) * NR > ip * MR; }

// The tiles of task (bi, bj) that run: each starts at +0 or C flushed, runs every k-block, then is
// stored with the bias (ops::linear_out) when there is one.
void run_task(const ops::GemmProblem& g, const Packed& pk, Kernel kern, bool upper, int bi, int bj) {
  const int ip0 = bi * TI, ip1 = std::min(pk.mp, ip0 + TI), jp0 = bj * TJ, jp1 = std::min(pk.np, jp0 + TJ);
  alignas(64) float tiles[TI * TJ][MR * NR];
  for (int jp = jp0; jp < jp1; ++jp) {
    for (int ip = ip0; ip < ip1; ++ip) {
      if (!runs(upper, ip, jp)) continue;
      float* t = tiles[(jp - jp0) * TI + (ip - ip0)];
      std::fill(t, t + MR * NR, 0.0f);
      if (!g.accumulate) continue;
      for (int r = 0; r < std::min(MR, g.m - ip * MR); ++r)
        for (int c = 0; c < std::min(NR, g.n - jp * NR); ++c)
          t[r * NR + c] = ops::bf16_pair_flush(g.c[static_cast<size_t>(ip * MR + r) * g.ldc + jp * NR + c]);
    }
  }
  for (int p0 = 0; p0 < pk.kp; p0 += KP) {
    const int kc = std::min(KP, pk.kp - p0);
    for (int jp = jp0; jp < jp1; ++jp) {
      const uint32_t* bp = pk.b.data() + (static_cast<size_t>(jp) * pk.kp + p0) * NR;
      for (int ip = ip0; ip < ip1; ++ip)
        if (runs(upper, ip, jp))
          kern(kc, pk.a.data() + (static_cast<size_t>(ip) * pk.kp + p0) * MR, bp, tiles[(jp - jp0) * TI + (ip - ip0)]);
    }
  }
  for (int jp = jp0; jp < jp1; ++jp) {
    for (int ip = ip0; ip < ip1; ++ip) {
      if (!runs(upper, ip, jp)) continue;
      const float* t = tiles[(jp - jp0) * TI + (ip - ip0)];
      for (int r = 0; r < std::min(MR, g.m - ip * MR); ++r) {
        float* row = g.c + static_cast<size_t>(ip * MR + r) * g.ldc + jp * NR;
        for (int c = 0; c < std::min(NR, g.n - jp * NR); ++c)
          row[c] = g.bias != nullptr ? ops::linear_out(t[r * NR + c], g.bias[jp * NR + c]) : t[r * NR + c];
      }
    }
  }
}

}  // namespace

void gemm_pairs(const ops::GemmProblem& g) {
  const Isa isa = active_isa();
  const Kernel kern = kernel(isa);
  const Pack pack = packer(isa);
  // A syrk's C[i][j] and C[j][i] are the same chain: the same operands (the same packing), the
  // products commuted exactly, the pads −0·+0 either way. Only the upper triangle's tiles run.
  const bool upper = ops::is_syrk(g);
  thread_local Packed buffer;  // this thread's, reused across calls; the team shares it through pk
  Packed& pk = buffer;
  pk.mp = (g.m + MR - 1) / MR;
  pk.np = (g.n + NR - 1) / NR;
  pk.kp = (g.k + 1) / 2;
  pk.a.resize(static_cast<size_t>(pk.mp) * pk.kp * MR);
  pk.b.resize(static_cast<size_t>(pk.np) * pk.kp * NR);
  const int ti = (pk.mp + TI - 1) / TI, tj = (pk.np + TJ - 1) / TJ;
#pragma omp parallel
  {
#pragma omp for schedule(static) nowait
    for (int i = 0; i < g.m; i += PL) pack(a_lines(g, i, PL), MR, pk.a.data() + static_cast<size_t>(i) * pk.kp);
#pragma omp for schedule(static)
    for (int j = 0; j < g.n; j += PL) pack(b_lines(g, j, PL), NR, pk.b.data() + static_cast<size_t>(j) * pk.kp);
#pragma omp for schedule(dynamic) collapse(2)
    for (int bj = 0; bj < tj; ++bj)
      for (int bi = 0; bi < ti; ++bi) run_task(g, pk, kern, upper, bi, bj);
    if (upper) {
#pragma omp for schedule(static)
      for (int i = 1; i < g.m; ++i) gemm::mirror_row(g.c, g.ldc, i);
    }
  }
}

}  // namespace sb::cpu::pairs
