// The CPU backend's GEMM, syrk and bias entry points: each numerics.gemm mode's engine of drivers,
// chosen once when the backend is made (canonical: gemm_canonical.cpp, rule 1's chains; exact:
// exact_driver.cpp, integer slices rounded once; canonical with numerics.bf16_dot = pairs:
// bf16_pairs_gemm.cpp for bf16 products — each the same bits for any thread count, tile or SIMD
// path; vendor: gemm_vendor.cpp), and the bias forward and backward (rule 3's token chains).
#include "samebits/core/ops/matmul.hpp"
#include "bf16_pairs.hpp"
#include "exact_gemm.hpp"
#include "gemm_tile.hpp"
#include "gemm_vendor.hpp"
#include "samebits/det/error.hpp"

namespace sb::cpu {
namespace {

void canonical_product(const ops::GemmProblem& g) { gemm::gemm_canonical(g); }
void canonical_syrk(const ops::GemmProblem& g) { gemm::gemm_canonical(g, GemmPart::syrk); }
void canonical_serial(GemmPart part, const ops::GemmProblem& g) {
  gemm::gemm_canonical(g, part, gemm::Schedule::serial);
}
void exact_serial(GemmPart, const ops::GemmProblem& g) { exact::gemm_exact(g); }
// pairs: bf16 products in the pair order (a syrk's upper triangle mirrored: a pair chain's products
// commute exactly, so C[i][j] and C[j][i] are the same chain); other precisions canonical.
void pairs_product(const ops::GemmProblem& g) {
  if (g.precision == Precision::bf16) pairs::gemm_pairs(g);
  else canonical_product(g);
}
void pairs_syrk(const ops::GemmProblem& g) {
  if (g.precision == Precision::bf16) pairs::gemm_pairs(g);
  else canonical_syrk(g);
}
void pairs_serial(GemmPart part, const ops::GemmProblem& g) {
  SB_CHECK(g.precision != Precision::bf16, "a serial causal GEMM runs fp32 operands only (attention), got bf16");
  canonical_serial(part, g);
}
void no_split(const ops::GemmProblem&) {
  SB_FAIL("a k-split GEMM (tensor parallelism's row-parallel products) runs under numerics.gemm=exact only");
}

// vendor: OpenBLAS (addmm with a bias: the bias rows, then the product with β = 1), its causal
// products the canonical chains; canonical: the bias in the GEMM's own fork/join, after each
// output's chain.
constexpr GemmEngine kCanonical{canonical_product, canonical_syrk, canonical_serial, no_split};
constexpr GemmEngine kVendor{gemm::gemm_vendor, gemm::syrk_vendor, canonical_serial, no_split};
constexpr GemmEngine kPairs{pairs_product, pairs_syrk, pairs_serial, no_split};
constexpr GemmEngine kExact{exact::gemm_exact, exact::gemm_exact, exact_serial, exact::gemm_exact_split};

}  // namespace

const GemmEngine& gemm_engine_of(const Numerics& n) {
  if (n.gemm == GemmMode::canonical && n.bf16_dot == Bf16Dot::pairs) return kPairs;
  return n.gemm == GemmMode::vendor ? kVendor : n.gemm == GemmMode::exact ? kExact : kCanonical;
}

void CpuBackend::gemm(const ops::GemmProblem& g) {
  check_gemm(g);
  if (g.group != nullptr) return gemm_.split(g);
  if (g.m == 0 || g.n == 0) return;
  if (g.bias != nullptr && g.k == 0) {  // no chains: C ← +0, then the bias
    gemm_.product(g.with_bias(nullptr));
    return bias_forward(g.c, g.bias, g.m, g.n);
  }
  gemm_.product(g);
}

void CpuBackend::syrk(const ops::GemmProblem& g) {
  SB_CHECK(ops::is_syrk(g), "syrk takes the product of ops::syrk_problem: C = op(A)·op(A)ᵀ");
  check_gemm(g);
  if (g.k == 0 || g.n == 0) gemm(g);
  else gemm_.syrk(g);
}

void CpuBackend::serial_gemm(GemmPart part, const ops::GemmProblem& g) const {
  SB_CHECK(g.m >= 0 && g.n >= 0 && g.k >= 1, "serial_gemm sizes: expected m, n >= 0 and k >= 1, got m=", g.m,
           " n=", g.n, " k=", g.k);
  if (g.m == 0 || g.n == 0) return;
  gemm_.serial(part, g);
}

void CpuBackend::bias_forward(float* out, const float* bias, int N, int OC) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    float* row = out + static_cast<size_t>(n) * OC;
#pragma omp simd
    for (int o = 0; o < OC; ++o) row[o] = ops::linear_out(row[o], bias[o]);
  }
}

void CpuBackend::bias_backward(float* dbias, const float* dout, int N, int OC) {
  token_reduce(dbias, N, OC, numerics().reduce, [&](float acc, int n, int o) {
    return ops::token_sum_step(acc, dout[static_cast<size_t>(n) * OC + o]);
  });
}

}  // namespace sb::cpu
