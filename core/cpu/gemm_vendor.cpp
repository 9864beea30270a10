// The vendor GEMM (numerics.gemm = vendor): OpenBLAS sgemm single-threaded on slices of C over the
// OpenMP threads (a bias as addmm adds it), ssyrk for syrk. Vendor mode promises no bits; OpenBLAS
// never splits k, so every output is the same chain as the unsliced call's.
#include <cblas.h>
#include <omp.h>

#include <cstring>
#include <vector>

#include "gemm_vendor.hpp"
#include "samebits/core/ops/matmul.hpp"

namespace sb::cpu::gemm {
namespace {

// A bf16/fp16 operand for OpenBLAS: the first `size` floats of `x` rounded into `copy` (fp32: x).
const float* vendor_operand(const float* x, size_t size, Precision prec, std::vector<float>& copy) {
  if (prec == Precision::fp32) return x;
  copy.resize(size);
  for (size_t i = 0; i < size; ++i) copy[i] = ops::round_operand(x[i], prec);
  return copy.data();
}

CBLAS_TRANSPOSE blas_trans(Trans t) { return t == Trans::no ? CblasNoTrans : CblasTrans; }

// sgemm on C's rows [m0, m1) and columns [n0, n1): the bias rows first, then β = 1.
void sgemm_slice(const ops::GemmProblem& g, const float* bias, int m0, int m1, int n0, int n1) {
  if (m1 <= m0 || n1 <= n0) return;
  const float* as = g.a + static_cast<size_t>(m0) * (g.ta == Trans::no ? g.lda : 1);
  const float* bs = g.b + static_cast<size_t>(n0) * (g.tb == Trans::no ? 1 : g.ldb);
  if (bias != nullptr)
    for (int i = m0; i < m1; ++i)
      std::memcpy(g.c + static_cast<size_t>(i) * g.ldc + n0, bias + n0, sizeof(float) * (n1 - n0));
  cblas_sgemm(CblasRowMajor, blas_trans(g.ta), blas_trans(g.tb), m1 - m0, n1 - n0, g.k, 1.0f, as, g.lda, bs, g.ldb,
              g.accumulate || bias != nullptr ? 1.0f : 0.0f, g.c + static_cast<size_t>(m0) * g.ldc + n0, g.ldc);
}

}  // namespace

// Slices of C's rows when m >= n, else of its columns (16-aligned). OpenBLAS's own thread pool
// stays idle, so it never competes with the OpenMP threads for the cores. Called inside a parallel
// region it runs whole on the calling thread. bf16/fp16 operands are rounded copies. With a bias
// (the linear layer's forward) each slice of C is first filled with the bias rows and the product
// added with β = 1, as PyTorch's addmm does: no β = 0 pass over C and no bias pass after it.
void gemm_vendor(const ops::GemmProblem& problem) {
  ops::GemmProblem g = problem;
  const float* const bias = g.bias;
  std::vector<float> ar, br;
  g.a = vendor_operand(g.a, static_cast<size_t>(g.ta == Trans::no ? g.m : g.k) * g.lda, g.precision, ar);
  g.b = vendor_operand(g.b, static_cast<size_t>(g.tb == Trans::no ? g.k : g.n) * g.ldb, g.precision, br);
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
  constexpr int kSlice = 16;  // rows or columns per slice: a multiple of OpenBLAS's register tiles
  const bool rows = g.m >= g.n;
  const int extent = rows ? g.m : g.n;
  const int slices = (extent + kSlice - 1) / kSlice;
  const int threads = omp_in_parallel() ? 1 : std::min(omp_get_max_threads(), slices);
  if (threads <= 1 || 2.0 * g.m * g.n * g.k < 4.0e6) {  // below ~4 MFLOP one call beats a fork
    sgemm_slice(g, bias, 0, g.m, 0, g.n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int first = std::min(extent, slices * t / nt * kSlice);
    const int last = std::min(extent, slices * (t + 1) / nt * kSlice);
    if (rows) sgemm_slice(g, bias, first, last, 0, g.n);
    else sgemm_slice(g, bias, 0, g.m, first, last);
  }
}

// OpenBLAS ssyrk's upper triangle, mirrored to the lower one: on the calling thread inside a
// parallel region (Muon runs its matrices on the OpenMP threads), else on OpenBLAS's threads (they
// split C's columns, never k: the same chains).
void syrk_vendor(const ops::GemmProblem& g) {
  const Trans ta = g.ta;
  const int n = g.n, k = g.k, lda = g.lda, ldc = g.ldc;
  float* const c = g.c;
  std::vector<float> ar;
  const float* a = vendor_operand(g.a, static_cast<size_t>(ta == Trans::no ? n : k) * lda, g.precision, ar);
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (openblas_get_num_threads() != threads) openblas_set_num_threads(threads);
  cblas_ssyrk(CblasRowMajor, CblasUpper, blas_trans(ta), n, k, 1.0f, a, lda, 0.0f, c, ldc);
  for (int i = 1; i < n; ++i) mirror_row(c, ldc, i);
}

}  // namespace sb::cpu::gemm
