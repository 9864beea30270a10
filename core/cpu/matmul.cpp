// The CPU backend's GEMM, syrk and linear-layer entry points: each numerics.gemm mode's driver
// (canonical: gemm_canonical.cpp, rule 1's chains; exact: exact_driver.cpp, integer slices rounded
// once — both the same bits for any thread count, tile or SIMD path; vendor: gemm_vendor.cpp), and
// the bias forward and backward (rule 3's token chains).
#include "samebits/core/ops/matmul.hpp"
#include "exact_gemm.hpp"
#include "gemm_tile.hpp"
#include "gemm_vendor.hpp"
#include "samebits/det/error.hpp"

namespace sb::cpu {

void CpuBackend::gemm(Trans ta, Trans tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                      float* c, int ldc, bool accumulate, Precision precision) {
  SB_CHECK(m >= 0 && n >= 0 && k >= 0, "gemm sizes must be non-negative, got m=", m, " n=", n, " k=", k);
  if (m == 0 || n == 0) return;
  const gemm::Problem g{ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate, precision};
  if (numerics().gemm == GemmMode::vendor) gemm::gemm_vendor(g);
  else if (numerics().gemm == GemmMode::exact) exact::gemm_exact(g);
  else gemm::gemm_canonical(g);
}

void CpuBackend::syrk(Trans ta, int n, int k, const float* a, int lda, float* c, int ldc, Precision precision) {
  SB_CHECK(n >= 0 && k >= 0, "syrk sizes must be non-negative, got n=", n, " k=", k);
  const Trans tb = ta == Trans::no ? Trans::yes : Trans::no;
  if (k == 0 || n == 0) gemm(ta, tb, n, n, k, a, lda, a, lda, c, ldc, false, precision);
  else if (numerics().gemm == GemmMode::vendor) gemm::syrk_vendor(ta, n, k, a, lda, c, ldc, precision);
  else if (numerics().gemm == GemmMode::exact)
    exact::gemm_exact({ta, tb, n, n, k, a, lda, a, lda, c, ldc, false, precision});
  else gemm::gemm_canonical({ta, tb, n, n, k, a, lda, a, lda, c, ldc, false, precision}, GemmPart::syrk);
}

void serial_gemm(GemmMode mode, GemmPart part, Trans ta, Trans tb, int m, int n, int k, const float* a, int lda,
                 const float* b, int ldb, float* c, int ldc) {
  SB_CHECK(m >= 0 && n >= 0 && k >= 1, "serial_gemm sizes: expected m, n >= 0 and k >= 1, got m=", m, " n=", n,
           " k=", k);
  if (m == 0 || n == 0) return;
  if (mode == GemmMode::exact)
    return exact::gemm_exact({ta, tb, m, n, k, a, lda, b, ldb, c, ldc, false, Precision::fp32});
  gemm::gemm_canonical({ta, tb, m, n, k, a, lda, b, ldb, c, ldc, false, Precision::fp32}, part, gemm::Schedule::serial);
}

bool CpuBackend::gemm_bias(float* out, const float* inp, const float* w, const float* bias, int N, int C, int OC) {
  if (N <= 0 || OC <= 0 || C <= 0) return false;
  const gemm::Problem g{Trans::no, Trans::yes, N, OC, C, inp, C, w, C, out, OC, false, numerics().precision};
  // vendor: addmm (the bias rows, then the product with β = 1); canonical: the bias in the GEMM's
  // own fork/join, after each output's chain.
  if (numerics().gemm == GemmMode::vendor) gemm::gemm_vendor(g, bias);
  else if (numerics().gemm == GemmMode::exact) exact::gemm_exact(g, bias);
  else gemm::gemm_canonical(g, GemmPart::full, gemm::Schedule::team, bias);
  return true;
}

void CpuBackend::gemm_exact_split(Trans ta, Trans tb, int m, int n, int k, const float* a, int lda, const float* b,
                                  int ldb, float* c, int ldc, const float* bias, int k_total, ExactGroup& group) {
  SB_CHECK(numerics().gemm == GemmMode::exact, "gemm_exact_split under numerics.gemm=", to_string(numerics().gemm));
  SB_CHECK(m >= 0 && n >= 0 && k >= 0, "gemm sizes must be non-negative, got m=", m, " n=", n, " k=", k);
  exact::gemm_exact_split({ta, tb, m, n, k, a, lda, b, ldb, c, ldc, false, numerics().precision}, k_total, bias, group);
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
