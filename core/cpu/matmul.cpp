// GEMM and the linear layer on the CPU. Canonical (rule 1): every C element is one fma chain over
// k ascending from +0 (or from C's value when accumulating); the kernel packs operands (rounding
// them to the GEMM precision), then register-blocked tiles continue each element's chain across
// k-blocks — no split-K, no partial sums. OpenMP over output tiles only: the bits do not depend
// on the thread count, the tile sizes or the SIMD width (bitwise equal to core/cuda/matmul.cu).
// Vendor: OpenBLAS sgemm.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "cpu_backend.hpp"
#include "samebits/core/ops/matmul.hpp"
#include "samebits/det/error.hpp"

#if defined(SB_HAVE_AVX512) || defined(SB_HAVE_AVX2)
#include <immintrin.h>
#endif

namespace sb::cpu {
namespace {

// Register tile MR × NR (rows of C × columns of C) per SIMD level; KC: the k-block.
#if defined(SB_HAVE_AVX512)
constexpr int MR = 8, NR = 32;
#elif defined(SB_HAVE_AVX2)
constexpr int MR = 6, NR = 16;
#else
constexpr int MR = 4, NR = 8;
#endif
constexpr int KC = 256;
// Tiles of one parallel task: TI row panels × TJ column panels.
constexpr int TI = 8, TJ = 4;
// Transposing packs move kPackBlock values of k at a time.
constexpr int kPackBlock = 16;

// The micro-kernel: c (MR, NR) with leading dimension ldc; ap (kc, MR) and bp (kc, NR) packed.
// The row loops are unrolled so that the accumulators stay in registers.
// c[r][j] ← fma(ap[p][r], bp[p][j], c[r][j]) for p ascending; starts from +0 unless load.
#if defined(SB_HAVE_AVX512)
void micro_kernel(int kc, const float* ap, const float* bp, float* c, int ldc, bool load) {
  __m512 acc[MR][2];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    acc[r][0] = load ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
    acc[r][1] = load ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();
  }
  for (int p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_loadu_ps(bp + p * NR);
    const __m512 b1 = _mm512_loadu_ps(bp + p * NR + 16);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512 a = _mm512_set1_ps(ap[p * MR + r]);
      acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm512_storeu_ps(c + r * ldc, acc[r][0]);
    _mm512_storeu_ps(c + r * ldc + 16, acc[r][1]);
  }
}
#elif defined(SB_HAVE_AVX2)
void micro_kernel(int kc, const float* ap, const float* bp, float* c, int ldc, bool load) {
  __m256 acc[MR][2];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    acc[r][0] = load ? _mm256_loadu_ps(c + r * ldc) : _mm256_setzero_ps();
    acc[r][1] = load ? _mm256_loadu_ps(c + r * ldc + 8) : _mm256_setzero_ps();
  }
  for (int p = 0; p < kc; ++p) {
    const __m256 b0 = _mm256_loadu_ps(bp + p * NR);
    const __m256 b1 = _mm256_loadu_ps(bp + p * NR + 8);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256 a = _mm256_broadcast_ss(ap + p * MR + r);
      acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm256_storeu_ps(c + r * ldc, acc[r][0]);
    _mm256_storeu_ps(c + r * ldc + 8, acc[r][1]);
  }
}
#else
void micro_kernel(int kc, const float* ap, const float* bp, float* c, int ldc, bool load) {
  float acc[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) acc[r][j] = load ? c[r * ldc + j] : 0.0f;
  for (int p = 0; p < kc; ++p)
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < NR; ++j) acc[r][j] = det::fma_f32(ap[p * MR + r], bp[p * NR + j], acc[r][j]);
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) c[r * ldc + j] = acc[r][j];
}
#endif

// op(A) row panel: rows i0 .. i0+MR-1 (zeros beyond m) for all k, packed (k, MR), rounded to P.
// Loops follow the storage order, so reads are contiguous for either transposition.
template <Precision P>
void pack_a(float* ap, Trans ta, const float* a, int lda, int i0, int m, int k) {
  const int h = std::min(MR, m - i0);
  if (ta == Trans::no) {
    for (int p0 = 0; p0 < k; p0 += kPackBlock) {  // a transpose, in blocks that stay in L1
      const int p1 = std::min(k, p0 + kPackBlock);
      for (int r = 0; r < h; ++r) {
        const float* src = a + static_cast<size_t>(i0 + r) * lda;
        for (int p = p0; p < p1; ++p) ap[p * MR + r] = ops::round_operand(src[p], P);
      }
    }
  } else {
    for (int p = 0; p < k; ++p) {
      const float* src = a + static_cast<size_t>(p) * lda + i0;
#pragma omp simd
      for (int r = 0; r < h; ++r) ap[p * MR + r] = ops::round_operand(src[r], P);
    }
  }
  for (int r = h; r < MR; ++r)
    for (int p = 0; p < k; ++p) ap[p * MR + r] = 0.0f;
}

// op(B) column panel: columns j0 .. j0+NR-1 (zeros beyond n) for all k, packed (k, NR), rounded.
template <Precision P>
void pack_b(float* bp, Trans tb, const float* b, int ldb, int j0, int n, int k) {
  const int w = std::min(NR, n - j0);
  if (tb == Trans::no) {
    for (int p = 0; p < k; ++p) {
      const float* src = b + static_cast<size_t>(p) * ldb + j0;
#pragma omp simd
      for (int j = 0; j < w; ++j) bp[p * NR + j] = ops::round_operand(src[j], P);
    }
  } else {
    const float* src = b + static_cast<size_t>(j0) * ldb;
    for (int p = 0; p < k; ++p) {
#pragma omp simd
      for (int j = 0; j < w; ++j) bp[p * NR + j] = ops::round_operand(src[static_cast<size_t>(j) * ldb + p], P);
    }
  }
  for (int p = 0; p < k; ++p)
    for (int j = w; j < NR; ++j) bp[p * NR + j] = 0.0f;
}

// The packing functions for a precision (the rounding is hoisted out of the loops).
struct Packers {
  void (*a)(float*, Trans, const float*, int, int, int, int);
  void (*b)(float*, Trans, const float*, int, int, int, int);
};
Packers packers(Precision p) {
  switch (p) {
    case Precision::bf16: return {pack_a<Precision::bf16>, pack_b<Precision::bf16>};
    case Precision::fp16: return {pack_a<Precision::fp16>, pack_b<Precision::fp16>};
    case Precision::fp32: break;
  }
  return {pack_a<Precision::fp32>, pack_b<Precision::fp32>};
}

// One MR × NR tile of C at (i0, j0) over k-block [p0, p0+kc): continues each chain (load) unless
// this is the first block of a fresh product. Edge tiles go through a full-size local copy.
void run_tile(int kc, const float* ap, const float* bp, float* c, int ldc, int i0, int j0, int m,
              int n, bool load) {
  const int h = std::min(MR, m - i0), w = std::min(NR, n - j0);
  float* corner = c + static_cast<size_t>(i0) * ldc + j0;
  if (h == MR && w == NR) {
    micro_kernel(kc, ap, bp, corner, ldc, load);
    return;
  }
  alignas(64) float tile[MR * NR] = {};
  if (load)
    for (int r = 0; r < h; ++r)
      for (int j = 0; j < w; ++j) tile[r * NR + j] = corner[static_cast<size_t>(r) * ldc + j];
  micro_kernel(kc, ap, bp, tile, NR, load);
  for (int r = 0; r < h; ++r)
    for (int j = 0; j < w; ++j) corner[static_cast<size_t>(r) * ldc + j] = tile[r * NR + j];
}

void gemm_canonical(Trans ta, Trans tb, int m, int n, int k, const float* a, int lda,
                    const float* b, int ldb, float* c, int ldc, bool accumulate, Precision prec) {
  const int mp = (m + MR - 1) / MR, np = (n + NR - 1) / NR;
  if (k == 0) {
    if (!accumulate)
      for (int i = 0; i < m; ++i) std::fill(c + static_cast<size_t>(i) * ldc, c + static_cast<size_t>(i) * ldc + n, 0.0f);
    return;
  }
  const size_t a_panel = static_cast<size_t>(k) * MR, b_panel = static_cast<size_t>(k) * NR;
  // Packed operands, reused across calls from the same thread: (mp, k, MR) then (np, k, NR).
  thread_local std::vector<float> packed;
  if (packed.size() < a_panel * mp + b_panel * np) packed.resize(a_panel * mp + b_panel * np);
  float* const apack = packed.data();
  float* const bpack = packed.data() + a_panel * mp;
  const Packers pack = packers(prec);
#pragma omp parallel
  {
#pragma omp for schedule(static) nowait
    for (int ip = 0; ip < mp; ++ip) pack.a(apack + ip * a_panel, ta, a, lda, ip * MR, m, k);
#pragma omp for schedule(static)
    for (int jp = 0; jp < np; ++jp) pack.b(bpack + jp * b_panel, tb, b, ldb, jp * NR, n, k);
    const int ti = (mp + TI - 1) / TI, tj = (np + TJ - 1) / TJ;
#pragma omp for schedule(static) collapse(2)
    for (int bj = 0; bj < tj; ++bj) {
      for (int bi = 0; bi < ti; ++bi) {
        const int ip1 = std::min(mp, (bi + 1) * TI), jp1 = std::min(np, (bj + 1) * TJ);
        for (int p0 = 0; p0 < k; p0 += KC) {
          const int kc = std::min(KC, k - p0);
          const bool load = accumulate || p0 > 0;
          for (int jp = bj * TJ; jp < jp1; ++jp)
            for (int ip = bi * TI; ip < ip1; ++ip)
              run_tile(kc, apack + ip * a_panel + static_cast<size_t>(p0) * MR,
                       bpack + jp * b_panel + static_cast<size_t>(p0) * NR, c, ldc, ip * MR,
                       jp * NR, m, n, load);
        }
      }
    }
  }
}

// Vendor: OpenBLAS sgemm on as many threads as OpenMP has; bf16/fp16 operands are rounded copies.
void gemm_vendor(Trans ta, Trans tb, int m, int n, int k, const float* a, int lda, const float* b,
                 int ldb, float* c, int ldc, bool accumulate, Precision prec) {
  std::vector<float> ar, br;
  if (prec != Precision::fp32) {
    const size_t asz = static_cast<size_t>(ta == Trans::no ? m : k) * lda;
    const size_t bsz = static_cast<size_t>(tb == Trans::no ? k : n) * ldb;
    ar.resize(asz);
    br.resize(bsz);
    for (size_t i = 0; i < asz; ++i) ar[i] = ops::round_operand(a[i], prec);
    for (size_t i = 0; i < bsz; ++i) br[i] = ops::round_operand(b[i], prec);
    a = ar.data();
    b = br.data();
  }
  openblas_set_num_threads(omp_get_max_threads());
  cblas_sgemm(CblasRowMajor, ta == Trans::no ? CblasNoTrans : CblasTrans,
              tb == Trans::no ? CblasNoTrans : CblasTrans, m, n, k, 1.0f, a, lda, b, ldb,
              accumulate ? 1.0f : 0.0f, c, ldc);
}

}  // namespace

void CpuBackend::gemm(Trans ta, Trans tb, int m, int n, int k, const float* a, int lda,
                      const float* b, int ldb, float* c, int ldc, bool accumulate,
                      Precision precision) {
  SB_CHECK(m >= 0 && n >= 0 && k >= 0, "gemm sizes must be non-negative, got m=", m, " n=", n,
           " k=", k);
  if (m == 0 || n == 0) return;
  if (numerics().gemm == GemmMode::vendor)
    gemm_vendor(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate, precision);
  else
    gemm_canonical(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate, precision);
}

void CpuBackend::matmul_forward(float* out, const float* inp, const float* w, const float* bias,
                                int N, int C, int OC) {
  gemm(Trans::no, Trans::yes, N, OC, C, inp, C, w, C, out, OC, false, numerics().precision);
  if (bias == nullptr) return;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    float* row = out + static_cast<size_t>(n) * OC;
    for (int o = 0; o < OC; ++o) row[o] = ops::linear_out(row[o], bias[o]);
  }
}

void CpuBackend::matmul_backward(float* dinp, float* dw, float* dbias, const float* dout,
                                 const float* inp, const float* w, int N, int C, int OC) {
  const Precision prec = numerics().precision;
  if (dinp) gemm(Trans::no, Trans::no, N, C, OC, dout, OC, w, C, dinp, C, false, prec);
  gemm(Trans::yes, Trans::no, OC, C, N, dout, OC, inp, C, dw, C, false, prec);
  if (dbias) {
    token_reduce(dbias, N, OC, numerics().reduce, [&](float acc, int n, int o) {
      return ops::token_sum_step(acc, dout[static_cast<size_t>(n) * OC + o]);
    });
  }
}

}  // namespace sb::cpu
