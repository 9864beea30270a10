// The canonical GEMM's scalar micro-kernel (4 × 8 tile of plain loops): one det::fma_f32 chain per
// C element over k ascending (rule 1) — the definition the SIMD kernels reproduce bitwise.
// Included by gemm_tile.hpp only, in a build without SIMD.
#pragma once
#include "samebits/det/hd.hpp"

namespace sb::cpu::gemm {

constexpr int MR = 4, NR = 8;

template <ALayout L>
inline void micro_kernel(int kc, const float* ap, int as, const float* bp, float* c, int ldc, bool load) {
  float acc[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) acc[r][j] = load ? c[r * ldc + j] : 0.0f;
  for (int p = 0; p < kc; ++p)
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < NR; ++j) acc[r][j] = det::fma_f32(ap[a_index<L>(p, r, as)], bp[p * NR + j], acc[r][j]);
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) c[r * ldc + j] = acc[r][j];
}

}  // namespace sb::cpu::gemm
