// One GEMM as a typed problem: what Backend::gemm and syrk, every backend's kernel drivers, the
// tests and the benches take, host and device. A description only, no arithmetic: each numerics
// mode's bits for it are the backend's (rule 1's chains, the exact GEMM's rounding, vendor's own).
#pragma once
#include <cstdint>

#include "samebits/core/numerics.hpp"
#include "samebits/det/hd.hpp"

namespace sb {

enum class Trans : uint8_t { no, yes };

class ExactGroup;  // backend.hpp: the ranks over which an exact GEMM's k is split

namespace ops {

// C (m, n; ldc) ← [C +] op(A)·op(B) [+ bias[j]], row-major: op(A) (m, k), A stored (m, k; lda) or
// (k, m) when ta == yes; op(B) (k, n), B stored (k, n; ldb) or (n, k) when tb == yes. Operands in
// `precision` (rounded RNE on load, accumulated in fp32). accumulate: each output's chain starts
// from C's value instead of +0. bias (n) or null: one addition ops::linear_out after each output
// (C contiguous: ldc == n). group non-null: k is split across the group's ranks (numerics.gemm =
// exact only) — this rank holds k of op(A)'s k_total columns and the same rows of op(B), and C
// gets the unsplit product's bits (Backend::gemm).
struct GemmProblem {
  Trans ta = Trans::no, tb = Trans::no;
  int m = 0, n = 0, k = 0;
  const float* a = nullptr;
  int lda = 0;
  const float* b = nullptr;
  int ldb = 0;
  float* c = nullptr;
  int ldc = 0;
  bool accumulate = false;
  Precision precision = Precision::fp32;
  const float* bias = nullptr;
  ExactGroup* group = nullptr;
  int k_total = 0;

  SB_HD bool a_transposed() const { return ta == Trans::yes; }
  SB_HD bool b_transposed() const { return tb == Trans::yes; }
  // Rows of A and B as stored (the last one only as wide as needed).
  SB_HD int a_rows() const { return ta == Trans::no ? m : k; }
  SB_HD int b_rows() const { return tb == Trans::no ? k : n; }
  // The same product with a bias added after each chain.
  GemmProblem with_bias(const float* bias_n) const {
    GemmProblem g = *this;
    g.bias = bias_n;
    return g;
  }
  // The same product with k split across `ranks`, whose slices together hold k_all.
  GemmProblem split_over(ExactGroup& ranks, int k_all) const {
    GemmProblem g = *this;
    g.group = &ranks;
    g.k_total = k_all;
    return g;
  }
};

// BLAS ssyrk's product C (n, n; ldc) = op(A)·op(A)ᵀ as a GEMM: op(A) (n, k), A stored (n, k; lda)
// or (k, n) when ta == yes. Backend::syrk takes only this form (is_syrk).
inline GemmProblem syrk_problem(Trans ta, int n, int k, const float* a, int lda, float* c, int ldc, Precision p) {
  return {ta, ta == Trans::no ? Trans::yes : Trans::no, n, n, k, a, lda, a, lda, c, ldc, false, p};
}
inline bool is_syrk(const GemmProblem& g) {
  return g.a == g.b && g.lda == g.ldb && g.ta != g.tb && g.m == g.n && !g.accumulate && g.bias == nullptr &&
         g.group == nullptr;
}

}  // namespace ops
}  // namespace sb
