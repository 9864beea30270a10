// The canonical GEMM's driver (rule 1): every C element is one fma chain over k ascending from +0
// (or from C's value when accumulating). Operands are packed (rounded to the GEMM precision; a full
// product's fp32 row-major op(A) is read in place), then register-blocked tiles continue each
// element's chain across k-blocks — no split-K, no partial sums. OpenMP over output tiles only: the
// bits do not depend on the thread count, the tile sizes or the SIMD width (bitwise equal to
// core/cuda/matmul.cu). syrk computes the upper triangle's tiles and mirrors them: the same chains.
#include <vector>

#include "gemm_tile.hpp"
#include "samebits/core/ops/matmul.hpp"
#include "samebits/det/error.hpp"

namespace sb::cpu::gemm {
namespace {

// Every tile of C, in tasks of TI × TJ tiles (static: called inside the parallel region, whose
// end is the barrier). bias (n) or null: once a task's chains are complete, C[i][j] ←
// ops::linear_out(C[i][j], bias[j]) over its elements (the linear layer's output, in the same
// fork/join).
void all_tiles(const Packed& pk, bool accumulate, const float* bias) {
  const int ti = (pk.mp + TI - 1) / TI, tj = (pk.np + TJ - 1) / TJ;
#pragma omp for schedule(static) collapse(2) nowait
  for (int bj = 0; bj < tj; ++bj) {
    for (int bi = 0; bi < ti; ++bi) {
      const int ip1 = std::min(pk.mp, (bi + 1) * TI), jp1 = std::min(pk.np, (bj + 1) * TJ);
      for (int p0 = 0; p0 < pk.k; p0 += KC)
        for (int jp = bj * TJ; jp < jp1; ++jp)
          for (int ip = bi * TI; ip < ip1; ++ip) pk.tile(ip, jp, p0, std::min(KC, pk.k - p0), accumulate || p0 > 0);
      if (bias == nullptr) continue;
      const int i1 = std::min(pk.m, ip1 * MR), j0 = bj * TJ * NR, j1 = std::min(pk.n, jp1 * NR);
      for (int i = bi * TI * MR; i < i1; ++i) {
        float* row = pk.c + static_cast<size_t>(i) * pk.ldc;
#pragma omp simd
        for (int j = j0; j < j1; ++j) row[j] = ops::linear_out(row[j], bias[j]);
      }
    }
  }
}

// syrk: the tiles that reach the upper triangle j ≥ i (column panels from ip·MR / NR on), one
// task per row panel, longest first; then C[i][j] = C[j][i] below the diagonal — the same chain
// (Backend::syrk). Fresh chains (called inside the parallel region, whose end is the last barrier).
void upper_tiles_mirrored(const Packed& pk) {
#pragma omp for schedule(dynamic, 1)
  for (int ip = 0; ip < pk.mp; ++ip)
    for (int p0 = 0; p0 < pk.k; p0 += KC)
      for (int jp = ip * MR / NR; jp < pk.np; ++jp) pk.tile(ip, jp, p0, std::min(KC, pk.k - p0), p0 > 0);
#pragma omp for schedule(static) nowait
  for (int i = 1; i < pk.m; ++i) mirror_row(pk.c, pk.ldc, i);
}

// C ← 0 (a fresh product over k = 0) or unchanged (accumulating).
void empty_product(const ops::GemmProblem& g) {
  if (g.accumulate) return;
  for (int i = 0; i < g.m; ++i)
    std::fill(g.c + static_cast<size_t>(i) * g.ldc, g.c + static_cast<size_t>(i) * g.ldc + g.n, 0.0f);
}

// The panels of one call packed into this thread's reusable buffer: op(A) (mp, k, MR) — unless
// syrk reads slices of the B panels — then op(B) (np, k, NR).
Packed packed_layout(const ops::GemmProblem& g, GemmPart part) {
  const int mp = (g.m + MR - 1) / MR, np = (g.n + NR - 1) / NR;
  const bool own_a = !(part == GemmPart::syrk && NR % MR == 0);
  const size_t a_panel = static_cast<size_t>(g.k) * MR, b_panel = static_cast<size_t>(g.k) * NR;
  const size_t a_floats = own_a ? a_panel * mp : 0;
  thread_local std::vector<float> packed;
  if (packed.size() < a_floats + b_panel * np) packed.resize(a_floats + b_panel * np);
  // fp32 row-major op(A) of a full product: the tiles read A's rows in place.
  const bool a_rows = part == GemmPart::full && g.precision == Precision::fp32 && g.ta == Trans::no;
  return {packed.data(), packed.data() + a_floats, a_panel, b_panel, own_a ? MR : NR, mp, np, g.m, g.n, g.k, g.c,
          g.ldc,         a_rows ? g.a : nullptr,   g.lda};
}

// Packs op(A) panel ip over its part's k range only (op(A) columns [kb, ke)), or op(B) panel jp.
struct PanelPacker {
  const ops::GemmProblem& g;
  const Packed& pk;
  GemmPart part;
  Packers pack;
  void a(int ip) const {
    const auto [kb, ke] = panel_k_range(part, ip, g.k);
    const float* a_kb = g.a + static_cast<size_t>(kb) * (g.ta == Trans::no ? 1 : g.lda);
    pack.a(pk.a + ip * pk.a_panel + static_cast<size_t>(kb) * MR, g.ta, a_kb, g.lda, ip * MR, g.m, ke - kb);
  }
  void b(int jp) const { pack.b(pk.b + jp * pk.b_panel, g.tb, g.b, g.ldb, jp * NR, g.n, g.k); }
};

}  // namespace

void gemm_canonical(const ops::GemmProblem& g, GemmPart part, Schedule schedule) {
  if (g.k == 0) return empty_product(g);
  const bool plain = part == GemmPart::full && g.bias == nullptr && schedule == Schedule::team;
  if (plain && use_k_outer(g.m, g.n, g.k)) return gemm_k_outer(g);
  if (plain) {
    if (const StreamSide side = stream_side(g.m, g.n, g.k); side != StreamSide::none) return gemm_streamed(side, g);
  }
  const Packed pk = packed_layout(g, part);
  const PanelPacker pack{g, pk, part, packers(g.precision)};
  if (schedule == Schedule::serial) {  // the causal parts on the calling thread, no team: plain loops
    SB_CHECK(part != GemmPart::full && part != GemmPart::syrk, "a serial canonical GEMM takes a causal part");
    for (int ip = 0; ip < pk.mp; ++ip) pack.a(ip);
    for (int jp = 0; jp < pk.np; ++jp) pack.b(jp);
    for (int ip = 0; ip < pk.mp; ++ip) causal_panel(pk, part, ip);
    return;
  }
#pragma omp parallel
  {
    if (pk.a_stride == MR) {
#pragma omp for schedule(static) nowait
      for (int ip = 0; ip < pk.mp; ++ip)
        if (!pk.in_place(ip)) pack.a(ip);
    }
#pragma omp for schedule(static)
    for (int jp = 0; jp < pk.np; ++jp) pack.b(jp);
    if (part == GemmPart::full) all_tiles(pk, g.accumulate, g.bias);
    else if (part == GemmPart::syrk) upper_tiles_mirrored(pk);
    else causal_tiles(pk, part);
  }
}

}  // namespace sb::cpu::gemm
