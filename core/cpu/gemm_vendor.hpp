// The vendor GEMM and syrk (gemm_vendor.cpp; numerics.gemm = vendor): OpenBLAS, no bits promised.
#pragma once
#include "gemm_tile.hpp"

namespace sb::cpu::gemm {

// C ← [C +] op(A)·op(B), or with bias (n) C ← bias + op(A)·op(B) (addmm).
void gemm_vendor(const Problem& g, const float* bias = nullptr);
// C (n, n) ← op(A)·op(A)ᵀ.
void syrk_vendor(Trans ta, int n, int k, const float* a, int lda, float* c, int ldc, Precision prec);

}  // namespace sb::cpu::gemm
