// The canonical GEMM's causal parts (GemmPart lower, k_to_row, k_from_row; cpu_backend_class.hpp):
// one task per row panel with the panel's own k range and column panels. Every element computed
// is rule 1's chain over its k range, bitwise the full product's where the operands hold zeros.
#include "gemm_tile.hpp"
#include "samebits/det/hd.hpp"

namespace sb::cpu::gemm {
namespace {

// k_to_row, row panel ip after its tiles ran every row's chain to the panel's first row row0:
// each row i continues its own chains over k = row0 .. i and stops there. A chain must not run
// past its row: a masked term fma(+0, x, acc) turns an accumulated −0 into +0 (rule 1 ends the
// chain at i). fresh: the tiles ran no k (row0 = 0), the chains start at +0. Operands come from
// the packed panels (already rounded to the GEMM precision).
void finish_rows_to_diagonal(const Packed& pk, int ip, bool fresh) {
  const int row0 = ip * MR;
  for (int i = row0; i < std::min(row0 + MR, pk.m); ++i) {
    float* ci = pk.c + static_cast<size_t>(i) * pk.ldc;  // (n)
    if (fresh) std::fill(ci, ci + pk.n, 0.0f);
    for (int p = row0; p < std::min(i + 1, pk.k); ++p) {
      const float a_ip = pk.a_at(ip, p)[i - row0];
      for (int jp = 0; jp < pk.np; ++jp) {
        const float* bp = pk.b + jp * pk.b_panel + static_cast<size_t>(p) * NR;  // (NR)
        float* cj = ci + jp * NR;
        const int cols = std::min(NR, pk.n - jp * NR);
#pragma omp simd
        for (int j = 0; j < cols; ++j) cj[j] = det::fma_f32(a_ip, bp[j], cj[j]);
      }
    }
  }
}

}  // namespace

// The k range [begin, end) of row panel ip's chains: all of k, or cut at the panel (k_to_row,
// k_from_row).
KRange panel_k_range(GemmPart part, int ip, int k) {
  const int row0 = ip * MR;
  return {part == GemmPart::k_from_row ? std::min(row0, k - 1) : 0,
          part == GemmPart::k_to_row ? std::min(k, row0 + MR) : k};
}

// Fresh chains. k_to_row's tiles stop at the panel's first row; finish_rows_to_diagonal ends each
// row's chains at the row itself.
void causal_panel(const Packed& pk, GemmPart part, int ip) {
  auto [kb, ke] = panel_k_range(part, ip, pk.k);
  if (part == GemmPart::k_to_row) ke = std::min(ke, ip * MR);
  const int last_row = ip * MR + MR - 1;
  const int jp1 = part == GemmPart::lower ? std::min(pk.np, last_row / NR + 1) : pk.np;
  for (int p0 = kb; p0 < ke; p0 += KC)
    for (int jp = 0; jp < jp1; ++jp) pk.tile(ip, jp, p0, std::min(KC, ke - p0), p0 > kb);
  if (part == GemmPart::k_to_row) finish_rows_to_diagonal(pk, ip, ke == kb);
}

// Called inside the parallel region, whose end is the barrier.
void causal_tiles(const Packed& pk, GemmPart part) {
#pragma omp for schedule(dynamic, 1) nowait
  for (int ip = 0; ip < pk.mp; ++ip) causal_panel(pk, part, ip);
}

}  // namespace sb::cpu::gemm
