// The vendor GEMM and syrk (gemm_vendor.cpp; numerics.gemm = vendor): OpenBLAS, no bits promised.
#pragma once
#include "gemm_tile.hpp"

namespace sb::cpu::gemm {

// C ← [C +] op(A)·op(B), or with g.bias (n) C ← bias + op(A)·op(B) (addmm).
void gemm_vendor(const ops::GemmProblem& g);
// C (n, n) ← op(A)·op(A)ᵀ of g = ops::syrk_problem(…).
void syrk_vendor(const ops::GemmProblem& g);

}  // namespace sb::cpu::gemm
