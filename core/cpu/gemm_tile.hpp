// The canonical GEMM's shared pieces (internal to core/cpu): the problem, the register tile of the
// build's SIMD level, the packed operands and one tile's k-block. Every C element is rule 1's fma
// chain over k ascending, continued across k-blocks (load), never a sum of partials.
#pragma once
#include <algorithm>
#include <cstddef>

#include "cpu_backend_class.hpp"

namespace sb::cpu::gemm {

// How the micro-kernel reads op(A): packed (k, as) panels, or A's own rows in place (MR, as).
enum class ALayout : uint8_t { panel, rows };

// op(A)[r][p] = ap[a_index(p, r, as)].
template <ALayout L>
constexpr size_t a_index(int p, int r, int as) {
  return L == ALayout::rows ? static_cast<size_t>(r) * as + p : static_cast<size_t>(p) * as + r;
}

}  // namespace sb::cpu::gemm

#if defined(SB_HAVE_AVX512)
#include "gemm_kernel_avx512.hpp"
#elif defined(SB_HAVE_AVX2)
#include "gemm_kernel_avx2.hpp"
#else
#include "gemm_kernel_scalar.hpp"
#endif

namespace sb::cpu::gemm {

constexpr int KC = 256;         // the k-block of a tile's pass
constexpr int TI = 8, TJ = 4;   // tiles of one parallel task: TI row panels × TJ column panels
constexpr int kPackBlock = 16;  // transposing packs move kPackBlock values of k at a time

// One MR × NR tile of C at (i0, j0) over a k-block of kc: continues each chain (load) unless this
// is the first block of a fresh product. Edge tiles go through a full-size local copy.
template <ALayout L = ALayout::panel>
inline void run_tile(int kc, const float* ap, int as, const float* bp, float* c, int ldc, int i0, int j0, int m, int n,
                     bool load) {
  const int h = std::min(MR, m - i0), w = std::min(NR, n - j0);
  float* corner = c + static_cast<size_t>(i0) * ldc + j0;
  if (h == MR && w == NR) {
    micro_kernel<L>(kc, ap, as, bp, corner, ldc, load);
    return;
  }
  alignas(64) float tile[MR * NR] = {};
  if (load)
    for (int r = 0; r < h; ++r)
      for (int j = 0; j < w; ++j) tile[r * NR + j] = corner[static_cast<size_t>(r) * ldc + j];
  micro_kernel<L>(kc, ap, as, bp, tile, NR, load);
  for (int r = 0; r < h; ++r)
    for (int j = 0; j < w; ++j) corner[static_cast<size_t>(r) * ldc + j] = tile[r * NR + j];
}

// The packed operands of one call and the C they multiply into: (m, n) with ldc. op(B) is np
// column panels (k, NR); op(A) is mp row panels (k, MR) — or, for syrk where op(A) = op(B)ᵀ,
// slices of the B panels read with stride NR (a_stride), when NR is a multiple of MR. a_rows: A
// itself (row-major op(A), fp32, lda): its whole row panels are read in place, only a last partial
// one is packed.
struct Packed {
  float* a;  // the packing buffers (the drivers fill them, the tiles read them)
  float* b;
  size_t a_panel, b_panel;  // floats per panel: k·MR, k·NR
  int a_stride;             // MR, or NR when A panels are B-panel slices
  int mp, np, m, n, k;
  float* c;
  int ldc;
  const float* a_rows = nullptr;
  int lda = 0;
  const float* a_at(int ip, int p0) const {
    if (a_stride == MR) return a + ip * a_panel + static_cast<size_t>(p0) * MR;
    const int row = ip * MR;
    return b + (row / NR) * b_panel + static_cast<size_t>(p0) * NR + row % NR;
  }
  // Tile (ip, jp) over the k-block [p0, p0 + kc).
  void tile(int ip, int jp, int p0, int kc, bool load) const {
    const float* bp = b + jp * b_panel + static_cast<size_t>(p0) * NR;
    if (in_place(ip))
      run_tile<ALayout::rows>(kc, a_rows + static_cast<size_t>(ip) * MR * lda + p0, lda, bp, c, ldc, ip * MR, jp * NR,
                              m, n, load);
    else run_tile(kc, a_at(ip, p0), a_stride, bp, c, ldc, ip * MR, jp * NR, m, n, load);
  }
  bool in_place(int ip) const { return a_rows != nullptr && (ip + 1) * MR <= m; }
};

// The packing functions for a precision (gemm_pack.cpp; the rounding is hoisted out of the loops).
// a: op(A) row panel, rows i0 .. i0+MR-1 (zeros beyond m) for all k, packed (k, MR), rounded.
// b: op(B) column panel, columns j0 .. j0+NR-1 (zeros beyond n) for all k, packed (k, NR), rounded.
struct Packers {
  void (*a)(float* ap, Trans ta, const float* a, int lda, int i0, int m, int k);
  void (*b)(float* bp, Trans tb, const float* b, int ldb, int j0, int n, int k);
};
Packers packers(Precision p);

// Row i of a symmetric C below the diagonal from its upper triangle: C[i][j] = C[j][i] for j < i.
inline void mirror_row(float* c, int ldc, int i) {
  for (int j = 0; j < i; ++j) c[static_cast<size_t>(i) * ldc + j] = c[static_cast<size_t>(j) * ldc + i];
}

// The drivers (gemm_*.cpp) of one product (ops/gemm_problem.hpp; no k-split). gemm_canonical runs
// any part (cpu_backend_class.hpp) on its own OpenMP team, or the causal parts on the calling
// thread (Schedule::serial). g.bias (n), full only: C ← C + bias per row after the chains.
enum class Schedule : uint8_t { team, serial };
void gemm_canonical(const ops::GemmProblem& g, GemmPart part = GemmPart::full, Schedule schedule = Schedule::team);
// Long k into a C that stays in cache: packs one k-block at a time (gemm_k_outer.cpp).
bool use_k_outer(int m, int n, int k);
void gemm_k_outer(const ops::GemmProblem& g);
// One operand far larger than the other: the large one packed a block at a time (gemm_streamed.cpp).
enum class StreamSide : uint8_t { none, a, b };
StreamSide stream_side(int m, int n, int k);
void gemm_streamed(StreamSide side, const ops::GemmProblem& g);
// The causal parts' tiles, one task per row panel (gemm_causal.cpp); the packed k range of a panel.
void causal_tiles(const Packed& pk, GemmPart part);
void causal_panel(const Packed& pk, GemmPart part, int ip);
struct KRange {
  int begin, end;
};
KRange panel_k_range(GemmPart part, int ip, int k);

}  // namespace sb::cpu::gemm
